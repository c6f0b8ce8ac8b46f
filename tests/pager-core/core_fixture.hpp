// Helpers shared by the pager-core tests: small geometries and a snapshot of every observable
// piece of core state, to prove a refused request changed nothing.
#pragma once
#include <vector>

#include "moepage/pager_core/pager_core.hpp"

namespace moepage::test {

inline pager::CoreGeometry small_geometry(uint32_t slots, pager::PolicyKind policy = pager::PolicyKind::Lru,
                                          uint32_t pools = 1) {
  pager::CoreGeometry g;
  g.n_layers = 3;
  g.n_experts = 8;
  g.slots_per_layer = slots;
  g.pools_per_layer = pools;
  g.paged = {0, 1, 1};  // layer 0 is dense (no routed experts)
  g.policy.kind = policy;
  return g;
}

struct CoreSnapshot {
  std::vector<int64_t> values;
  bool operator==(const CoreSnapshot&) const = default;
};

inline CoreSnapshot snapshot(const pager::PagerCore& core) {
  CoreSnapshot s;
  const auto& g = core.geometry();
  for (uint32_t l = 0; l < g.n_layers; ++l) {
    if (!core.is_paged(l)) continue;
    for (uint32_t p = 0; p < core.pools_per_layer(); ++p) {
      const pager::SlotPool& pool = core.pool(l, p);
      for (uint32_t e = 0; e < pool.n_experts(); ++e) s.values.push_back(pool.slot_of(e));
      for (uint32_t slot = 0; slot < pool.n_slots(); ++slot) {
        s.values.push_back(pool.expert_of(slot));
        s.values.push_back(int64_t(pool.state(slot)));
        s.values.push_back(pool.prefetched_unused(slot));
        s.values.push_back(pool.token_protected(slot));
      }
      s.values.push_back(int64_t(pool.generation()));
      const auto& c = pool.counters();
      for (uint64_t v : {c.accesses, c.hits, c.misses, c.prefetch_issued, c.prefetch_used, c.prefetch_wasted,
                         c.prefetch_failed, c.fills_failed})
        s.values.push_back(int64_t(v));
    }
    const auto lc = core.layer_counters(l);
    for (uint64_t v : {lc.accesses, lc.hits, lc.misses, lc.table_changes}) s.values.push_back(int64_t(v));
  }
  return s;
}

// plan + commit in one go, as a synchronous pager would.
inline const pager::Plan& acquire(pager::PagerCore& core, uint32_t layer, std::vector<int32_t> experts) {
  const pager::Plan& plan = core.plan(layer, experts);
  if (plan.fill) core.commit_fill(layer, plan.fill);
  return plan;
}

}  // namespace moepage::test
