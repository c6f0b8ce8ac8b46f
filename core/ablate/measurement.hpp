// What one run of one arm measured, read back from a `moepage run` child: the generated ids from
// stdout ("token ids: 5 7 ..."), the prefill/decode timing line from its log, and, when that
// `moepage run` has --stats-json, the pager statistics and phase times from the JSON file.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moepage::ablate {

// The pager's counters (names as in mp_pager_stats).
struct PagerCounters {
  uint64_t accesses = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t bytes_read = 0;       // demand + prefetch + load
  uint64_t load_bytes_read = 0;  // read while the pager was created (resident: everything)
  uint64_t read_ns = 0;          // host time inside demand reads
  uint64_t wait_ns = 0;          // compute blocked on expert bytes
  uint64_t prefetch_issued = 0;
  uint64_t prefetch_used = 0;
  uint64_t prefetch_wasted = 0;
  uint32_t slots_per_layer = 0;
  bool resident = false;
};

struct Measurement {
  std::vector<int32_t> ids;
  uint32_t prompt_tokens = 0;
  uint32_t generated = 0;  // ids generated; the decode phase ran generated - 1 forwards
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
  double wall_seconds = 0.0;  // the whole child process
  uint64_t peak_rss_bytes = 0;
  std::optional<double> load_seconds;            // from --stats-json, else wall - prefill - decode
  bool load_is_estimate = false;                 // true when derived from wall time
  std::optional<double> routed_compute_seconds;  // only when the stats report it
  std::optional<PagerCounters> pager;

  // Derived per-run quantities (nullopt when not measurable).
  std::optional<double> prefill_tok_s() const;
  std::optional<double> decode_tok_s() const;
  std::optional<double> ms_per_token() const;  // decode
  std::optional<double> hit_rate() const;
  // Expert bytes read while generating (load excluded) over prefill + decode tokens.
  std::optional<double> bytes_per_token() const;
  // The pager's read + wait time over all tokens; a resident pager's reads all happened at load,
  // so only its wait (none) counts.
  std::optional<double> expert_io_ms_per_token() const;
};

// "token ids: 1 2 3" (the last such line); throws std::runtime_error naming `where` when absent.
std::vector<int32_t> parse_token_ids(const std::string& stdout_text, const std::string& where);
// Prompt tokens and both phase times from the run's log line "prefill N tokens in X s (...);
// decode M tokens in Y s (...)"; false when absent. `generated` is left alone: set it from the ids.
bool parse_timing_line(const std::string& log_text, Measurement& m);
// Fills pager counters and times from a --stats-json document. Tolerant of layout: the pager
// counters are the top-level "pager" object, else the first object holding "hits" and
// "bytes_read"; times are the first numbers named
// load_seconds, prefill_seconds, decode_seconds, prompt_tokens, generated_tokens and
// routed_compute_seconds found anywhere (`moepage run` writes {"pager": {...}, "run": {...}}).
// Throws std::runtime_error naming `where` when the text is not JSON.
void apply_stats_json(const std::string& json_text, const std::string& where, Measurement& m);

}  // namespace moepage::ablate
