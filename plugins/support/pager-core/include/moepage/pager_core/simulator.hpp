// Replays an expert trace through slot pools, one pool per layer, under a policy: the core of
// `moepage simulate`.
//
// Replay, per layer, in trace order: the trace's requests (maximal runs of consecutive access rows
// with the same token and layer and no hint row between them) and its hint calls. A request larger
// than the slot count is served as consecutive chunks of at most `slots` experts (or max_request).
//
// lru, lfu, lfru: each layer is a one-layer PagerCore, the object the live paged pager drives, so
// requests, hints, eviction and the policy classes are the live pager's own code. A new token calls
// begin_token; a hint call is PagerCore::prefetch, its fill left pending like a live prefetch read;
// a chunk first commits the layer's pending prefetch fills (and a hint does so when
// kMaxPendingPrefetchesPerLayer are pending), then is one PagerCore::plan whose fill completes at
// once. So the simulated lru equals the live lru pager on the trace of the same run, hash-routed
// (hinted) layers included.
//
// belady: the offline floor. It uses a hint as a free load just in time: an access whose expert
// was hinted (for its layer) since the expert's previous access costs no miss, since the hint made
// the read free and a pager could have waited for the access to do it. Evictions pick the expert
// whose next costly (unhinted) access lies furthest in the future; an expert whose next access is
// hinted counts as never used again (reloading it will be free). This is optimal for that cost
// model, and every policy above it replays hints as prefetches that the model counts as free
// loads, so belady stays at or below every policy, hints or not. Without hints it is plain Belady.
// Belady sees, before each chunk, the next-use index of each of the chunk's experts.
//
// Predict rows (v3: what a pager's predictor proposed) are replayed like hints, only by policies
// with prefetch_predictions, truncated to predict_m; belady ignores them (it knows the future).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "moepage/pager_core/policy.hpp"
#include "moepage/pager_core/trace.hpp"

namespace moepage::pager {

struct SimLayerResult {
  uint64_t accesses = 0;
  uint64_t misses = 0;
  uint64_t prefetch_reads = 0;  // experts a replayed hint or prediction read into a slot
};

struct SimResult {
  PolicySpec policy;
  uint32_t slots = 0;                  // slots per layer actually used (capped at experts); with a
                                       // split, the uniform count whose total the split shares out
  std::vector<uint32_t> layer_slots;   // [trace.meta.layers] the slots each layer had
  std::vector<SimLayerResult> layers;  // [trace.meta.layers]
  uint64_t accesses = 0;
  uint64_t misses = 0;
  uint64_t prefetch_reads = 0;
  double miss_rate() const { return accesses ? double(misses) / double(accesses) : 0.0; }
  // Experts read per demand access: misses plus prefetch reads (belady's free loads count 0).
  double reads_per_access() const { return accesses ? double(misses + prefetch_reads) / double(accesses) : 0.0; }
};

// Throws PagerError when slots_per_layer is 0. With policy.split_by_trace, the total
// slots_per_layer x layers is first split per layer by this trace's reuse (split.hpp): an
// in-sample split.
SimResult simulate(const Trace& trace, uint32_t slots_per_layer, const PolicySpec& policy);
// The same, the split made from split_source's reuse (null: this trace's), as a live pager splits
// by its split_trace: an out-of-sample figure. split_source must have this trace's layers and
// experts (else PagerError).
SimResult simulate(const Trace& trace, uint32_t slots_per_layer, const PolicySpec& policy, const Trace* split_source);
// Each layer with its own slot count ([trace.meta.layers], each at least 1, capped at experts).
// max_request > 0 cuts requests into chunks of at most that many experts in every layer, as a live
// pager with a split does (its architecture cuts prefill bands to the smallest layer's slots);
// 0: each layer's own slots.
SimResult simulate_layers(const Trace& trace, std::span<const uint32_t> layer_slots, const PolicySpec& policy,
                          uint32_t max_request = 0);

// The trace cut into per-layer schedules once, so one layer can be replayed at many slot counts
// (the miss curves behind split.hpp). Keeps a reference to the trace.
class TraceReplay {
 public:
  struct LayerSchedule {
    std::vector<uint32_t> rows;     // indices into trace.rows, in order
    std::vector<uint64_t> request;  // [rows] the request (one acquire) each row belongs to
    std::vector<uint32_t> hints;    // indices into trace.hints, in order
  };
  explicit TraceReplay(const Trace& trace);
  bool has_rows(uint32_t layer) const;
  // One layer's counts at `slots` slots (capped at the experts) under `policy`, requests cut into
  // chunks of at most max_request experts (0: slots).
  SimLayerResult replay(uint32_t layer, uint32_t slots, const PolicySpec& policy, uint32_t max_request = 0) const;

 private:
  const Trace& trace_;
  std::vector<LayerSchedule> layers_;
};

// What the live pager recorded in the trace's hit column (trace.has_outcomes must be true).
SimResult recorded_result(const Trace& trace);

}  // namespace moepage::pager
