// The pager bookkeeping core: every paged layer's slot pools (one per layer, or two when gate_up
// and down live in separate pools), request planning, fill completion and failure, prefetch
// bookkeeping, expert ownership and counters. Pure host code: no device calls, no I/O, and no
// allocation after construction (tests/pager-core counts operator new to prove it). Not
// thread-safe: a pager calls it from one thread, or under its own lock.
//
// How a pager plugin drives it, per token:
//   begin_token(t)
//   for each layer: plan = plan(layer, experts)       // validates everything, then mutates
//                   submit reads for every part with !hit into part.slot, tagged plan.fill
//                   wait for plan.fill and for any hit whose part.pending names another fill
//                   success -> commit_fill(layer, plan.fill)
//                   failure -> invalidate_fill(layer, plan.fill)   // never valid after a bad read
//                   upload the pointer table only when plan.table_changed
//                   prefetch(layer + 1, ranked predictions)        // optional; same fill protocol
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "moepage/pager_core/slot_pool.hpp"

namespace moepage::pager {

// Prefetch fills of one layer a pager keeps in flight: a hint that finds this many first settles
// (waits for and commits) them, and every plan() of the layer is preceded by settling them all.
// The live paged pager and the simulator both follow this rule, so they evict the same experts.
inline constexpr size_t kMaxPendingPrefetchesPerLayer = 4;

struct CoreGeometry {
  uint32_t n_layers = 0;
  uint32_t n_experts = 0;             // routed experts per layer
  uint32_t slots_per_layer = 0;       // slots in each pool (see budget.hpp); with layer_slots, the
                                      // uniform count the same total would give
  std::vector<uint32_t> layer_slots;  // [n_layers] optional per-layer slot counts (split.hpp), each in
                                      // 1..n_experts for a paged layer; empty: slots_per_layer everywhere
  uint32_t pools_per_layer = 1;       // 1: whole experts; 2: gate_up and down pools
  std::vector<uint8_t> paged;         // [n_layers] 1: the layer's routed experts are paged here
  std::vector<uint8_t> in_catalog;    // [n_layers * n_experts] optional; empty: all of a paged layer
  std::vector<uint8_t> owned;         // [n_experts] optional; empty: this rank owns every expert
  PolicySpec policy;
};

// What plan() or prefetch() decided. Views into the core's storage: valid until the next plan()
// or prefetch() call.
struct Plan {
  uint32_t layer = 0;
  uint32_t n_pools = 1;
  uint32_t misses = 0;               // experts with at least one part to read
  bool table_changed = false;        // the layer's expert -> slot mapping changed since its last plan
  uint64_t fill = 0;                 // tag of this plan's reads (commit/invalidate it); 0: none
  std::span<const int32_t> experts;  // plan: the request; prefetch: the experts it placed
  uint32_t stride = 0;               // pool-major parts: expert i of pool p at p * stride + i
  std::span<const SlotPlan> parts;

  uint32_t size() const { return uint32_t(experts.size()); }
  const SlotPlan& part(uint32_t i, uint32_t pool = 0) const { return parts[size_t(pool) * stride + i]; }
  // Every part of expert i was mapped before this plan.
  bool hit(uint32_t i) const;
};

struct LayerCounters {
  uint64_t accesses = 0;
  uint64_t hits = 0;  // every part of the expert was mapped
  uint64_t misses = 0;
  uint64_t prefetch_issued = 0;  // prefetch counters follow the layer's first pool
  uint64_t prefetch_used = 0;
  uint64_t prefetch_wasted = 0;
  uint64_t prefetch_failed = 0;
  uint64_t fills_failed = 0;   // slots emptied by invalidate_fill, all pools
  uint64_t table_changes = 0;  // plans that reported table_changed
  LayerCounters& operator+=(const LayerCounters& o);
};

class PagerCore {
 public:
  explicit PagerCore(CoreGeometry geometry);

  const CoreGeometry& geometry() const { return geo_; }
  uint32_t slots_per_layer() const { return geo_.slots_per_layer; }
  // The fewest slots of any paged layer: the largest request every layer can serve.
  uint32_t min_layer_slots() const;
  // The slots of `layer`'s pools (its layer_slots entry, or slots_per_layer).
  uint32_t slots(uint32_t layer) const {
    return geo_.layer_slots.empty() ? geo_.slots_per_layer : geo_.layer_slots[layer];
  }
  uint32_t pools_per_layer() const { return geo_.pools_per_layer; }
  bool is_paged(uint32_t layer) const { return layer < geo_.n_layers && geo_.paged[layer] != 0; }
  // The pool of (layer, part); the layer must be paged.
  const SlotPool& pool(uint32_t layer, uint32_t part = 0) const;
  uint64_t token() const { return token_; }

  // A new token (or prefill chunk) starts: clears the prefetch protection of the last one.
  void begin_token(uint64_t token);

  // Makes experts[0..n) of `layer` resident: validates the whole request first (layer paged,
  // n within the slots, each expert in range, in the catalog, owned by this rank, distinct, and
  // slots to evict for the misses) and throws PagerError naming layer and expert without
  // changing anything; then maps the experts (see slot_pool.hpp for the exact order).
  const Plan& plan(uint32_t layer, std::span<const int32_t> experts);

  // Places predicted experts of `layer`, most likely first, while slots can be had without
  // evicting an expert the current token requested or a slot still being filled. Experts already
  // mapped and experts this rank does not own are skipped (a prediction is advice). Out of range
  // or repeated experts throw. The plan lists only the experts it placed.
  const Plan& prefetch(uint32_t layer, std::span<const int32_t> ranked);

  // The reads of `fill` landed: their slots become valid. Returns the slots changed. With a
  // part (0 or 1), only that pool's slots (when gate_up and down complete separately).
  uint32_t commit_fill(uint32_t layer, uint64_t fill, int32_t part = -1);
  // The reads of `fill` failed or were short: every slot they were filling becomes empty (in
  // every pool of the layer, or only in `part`).
  uint32_t invalidate_fill(uint32_t layer, uint64_t fill, int32_t part = -1);

  LayerCounters layer_counters(uint32_t layer) const;
  LayerCounters total_counters() const;

 private:
  void check_layer(uint32_t layer) const;
  void check_part(uint32_t layer, int32_t part) const;
  void check_expert(uint32_t layer, int32_t expert) const;
  uint64_t layer_generation(uint32_t layer) const;
  SlotPool& pool_mut(uint32_t layer, uint32_t part);
  // commit_fill and invalidate_fill: `end` applied to the fill in every pool of the layer, or in `part`.
  uint32_t end_fill(uint32_t layer, uint64_t fill, int32_t part, uint32_t (SlotPool::*end)(uint64_t));

  CoreGeometry geo_;
  std::vector<int32_t> pool_index_;  // [n_layers] first pool of the layer in pools_, -1 if not paged
  std::vector<SlotPool> pools_;
  std::vector<uint64_t> reported_gen_;    // [n_layers] generation at the layer's last plan
  std::vector<uint64_t> table_changes_;   // [n_layers]
  std::vector<uint64_t> layer_accesses_;  // [n_layers] an expert hits when every part hits
  std::vector<uint64_t> layer_hits_;
  std::vector<uint64_t> layer_misses_;
  std::vector<int32_t> request_;  // scratch [slots] the request (or placed experts)
  std::vector<SlotPlan> parts_;   // scratch [slots * pools]
  std::vector<uint64_t> seen_;    // scratch [n_experts] duplicate stamps for prefetch
  uint64_t seen_stamp_ = 0;
  uint64_t next_fill_ = 1;
  uint64_t token_ = 0;
  Plan plan_;
};

}  // namespace moepage::pager
