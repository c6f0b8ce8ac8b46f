// Splitting one slot budget across layers by each layer's measured reuse.
//
// Layers of a real MoE model differ: DeepSeek-V4's hash-routed layers are hinted from the token id
// before each step and barely miss at any size, and its scored layers reuse their experts to very
// different degrees. A uniform split gives each the same slots; this one gives a slot to whichever
// layer it saves the most cost in.
//
// The cost (SplitObjective) is by default the experts a layer reads into its slots: its misses
// plus the prefetches its hints and predictions read. Counting misses alone undervalues a hinted
// layer: its hinted experts are prefetched, so it almost never misses, but at top-k slots it reads
// every hinted expert again each token (on the Flash held-out trace at 128 slots the miss split
// read 40% more than uniform pools; bench/results/2026-12-05-split-out-of-sample.md). Where the
// copy link bounds a token, reads are what it pays; the miss objective remains for paths where
// prefetches hide entirely behind compute.
//
// Greedy by marginal gain: every layer in the split starts at min_slots (top-k: a token's request
// must fit); then, one step at a time, the step goes to the layer whose simulated cost drops the
// most per slot when it grows by the step (ties: the layer with the larger cost, then the lower
// layer), until the total is spent or every layer holds all its experts. A step is total / (16 x
// layers) slots, rounded down and at least one (one slot up to 31 slots a layer): each step
// replays a whole layer of the trace, and slot by slot the 12-layer Flash trace's 25,600-token
// tail took 30 s at 64 slots a layer on this project's VM, a minute at load on the GPU machine.
// The cost curve of a layer is its replay through the simulator (simulator.hpp) under the chosen
// policy, hints and predictions as the policy replays them, computed lazily: only the next point
// of each layer's curve is ever needed. Curves that are not convex (prefetching can make them
// bumpy) make greedy a heuristic, not an optimum; on the recorded traces the curves are close to
// convex.
//
// This runs once, at pager creation or per simulated cell; it allocates freely.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "moepage/pager_core/policy.hpp"
#include "moepage/pager_core/trace.hpp"

namespace moepage::pager {

struct SplitRequest {
  uint64_t total_slots = 0;     // the budget: slots over every layer in the split
  uint32_t min_slots = 1;       // per layer in the split (top-k)
  std::vector<uint8_t> layers;  // [trace.meta.layers] 1: the layer takes part; empty: every layer
                                // with at least one access row in the trace
  PolicySpec policy;            // eviction policy of the cost curves
  SplitObjective objective = SplitObjective::Reads;
};

struct SplitPlan {
  std::vector<uint32_t> slots;   // [trace.meta.layers] 0 for layers outside the split
  std::vector<uint64_t> misses;  // [trace.meta.layers] simulated misses at those slots
  std::vector<uint64_t> reads;   // [trace.meta.layers] simulated misses + prefetch reads there
  uint64_t total_slots = 0;      // what the plan hands out: <= the request's total
};

// Throws PagerError(InvalidRequest) when the total cannot give every layer of the split
// min_slots, when min_slots is 0 or above the trace's experts, or when `layers` has the wrong size.
SplitPlan split_slots_by_reuse(const Trace& trace, const SplitRequest& request);

// "6,6,6,19,24,31,..." for logs and tables.
std::string format_layer_slots(const std::vector<uint32_t>& slots);

}  // namespace moepage::pager
