// Replays an expert trace through slot pools, one pool per layer, under a policy: the core of
// `moepage simulate`. It drives the same SlotPool (and so the same Policy classes and the same
// request order) as the live pager, so the simulated lru equals the live lru pager on the trace
// of a run without prefetch.
//
// Replay, per layer: the trace's requests (maximal runs of consecutive rows with the same token
// and layer) in trace order. A request larger than the slot count is served as consecutive
// chunks of at most `slots` experts. Each chunk is one SlotPool::demand (hits first, then misses,
// see slot_pool.hpp) whose fill completes at once. Belady sees, before each chunk, the index of
// the next chunk of the same layer that uses each of the chunk's experts.
#pragma once
#include <cstdint>
#include <vector>

#include "moepage/pager_core/policy.hpp"
#include "moepage/pager_core/trace.hpp"

namespace moepage::pager {

struct SimLayerResult {
  uint64_t accesses = 0;
  uint64_t misses = 0;
};

struct SimResult {
  PolicySpec policy;
  uint32_t slots = 0;                 // slots per layer actually used (capped at experts)
  std::vector<SimLayerResult> layers; // [trace.meta.layers]
  uint64_t accesses = 0;
  uint64_t misses = 0;
  double miss_rate() const { return accesses ? double(misses) / double(accesses) : 0.0; }
};

// Throws PagerError when slots_per_layer is 0.
SimResult simulate(const Trace& trace, uint32_t slots_per_layer, const PolicySpec& policy);

// What the live pager recorded in the trace's hit column (trace.has_outcomes must be true).
SimResult recorded_result(const Trace& trace);

}  // namespace moepage::pager
