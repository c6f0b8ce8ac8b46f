// Expert paging statistics and traces for `moepage run`: --trace FILE writes one row per expert
// access and one per hinted expert (the pager_core trace format, readable by `moepage simulate`),
// the run prints a summary of the pager's statistics, and --stats-json FILE writes them (overall
// and per layer) and the run's phase times as JSON.
#pragma once
#include <cstdio>
#include <optional>
#include <span>
#include <string>

#include "output/output_file.hpp"

#include "moepage/cpp/host_handles.hpp"

namespace moepage::cli {

// Receives the pager's trace events and writes them as rows into a temporary file that finish()
// checks and renames into place (a run that fails leaves no trace file). Rows are formatted into
// a fixed buffer: no allocation per access.
//
// Hints reach the pager from the architecture, not through the pager's trace events, so the
// writer also stands between the two: recording() gives the architecture a pager ref that
// forwards every call to the real pager and writes each successful hint() as hint rows (token =
// the last begin_token). Then `moepage simulate` replays the prefetches the live pager made.
class TraceWriter {
 public:
  // Throws std::runtime_error naming the file when it cannot be created.
  TraceWriter(const std::string& path, uint32_t layers, uint32_t experts, uint32_t top_k);
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  static void on_event(void* ctx, const mp_trace_event* event);
  uint64_t rows() const { return rows_; }
  // Flushes, closes and renames the file into place; throws output::OutputError naming it.
  void finish() { out_.commit(); }

  // The ref to bind the architecture to; valid while this writer lives (declare the writer
  // before the plugin stack so it outlives the architecture). destroy and create are not offered.
  mp_pager_ref recording(const mp_pager_ref& pager);

 private:
  void forward_later_calls();
  static TraceWriter& of(void* self) { return *static_cast<TraceWriter*>(self); }
  void write_hint(uint32_t layer, const int32_t* experts, uint32_t n);

  output::OutputFile out_;
  std::FILE* file_ = nullptr;  // out_'s stream
  uint64_t rows_ = 0;
  mp_pager_ref inner_{};
  mp_pager_vtable vtable_{};
  uint64_t token_ = 0;  // from the last begin_token through recording()
};

struct RunTimes {
  double prefill_seconds = 0, decode_seconds = 0;
  // Wall time from creating the architecture to binding the pager to it (arch, transport and
  // pager creation included; the tokenizer and the prompt are not).
  double load_seconds = 0;
  uint32_t prompt_tokens = 0, generated_tokens = 0;
  // Time the architecture spent computing routed experts (prefill and decode), when it measures it.
  std::optional<double> routed_compute_seconds;
  // Expert-parallel ranks: the all-reduces of the MoE blocks' outputs of the rank whose sums took
  // longest, and their time (mp_arch_stats 1.9; on GPUs summing on the device, device time).
  uint64_t collective_calls = 0;
  double collective_seconds = 0;
  // Decode layer steps looked up on the device, and those that waited for the host (mp_arch_stats 1.11).
  uint64_t slot_lookups = 0, slot_stalls = 0;
};

// One line per fact, for the log: accesses, hit rate, bytes, times, prefetch and predictions.
std::string format_pager_stats(const mp_pager_stats& s);
// The pager statistics of several ranks as one: counters and times summed, slots_per_layer and
// pool_bytes summed (the group's), resident only when every rank's pager is.
mp_pager_stats merge_pager_stats(std::span<const mp_pager_stats> ranks);
// Writes {"pager": {...}, "layers": [...], "run": {...}}; with more than one pager (the ranks of
// parallel.ranks), "pager" and "layers" are the ranks' sums and "ranks" lists each rank's
// {"rank", "pager", "layers"}. Throws naming the file on failure.
void write_stats_json(const std::string& path, std::span<mp::PagerHandle* const> pagers, uint32_t n_layers,
                      const RunTimes& times);

}  // namespace moepage::cli
