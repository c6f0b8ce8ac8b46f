// PagerCore: planning, validation before mutation, dirty tables, fills, ownership, two pools,
// and no allocation after construction.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "alloc_counter.hpp"
#include "core_fixture.hpp"
#include "moepage/pager_core/errors.hpp"

using namespace moepage::pager;
using moepage::test::acquire;
using moepage::test::small_geometry;
using moepage::test::snapshot;

namespace {

// Runs a refused request and checks the message and that nothing changed.
void check_refused(PagerCore& core, uint32_t layer, std::vector<int32_t> experts, const std::string& message,
                   ErrorKind kind = ErrorKind::InvalidRequest) {
  const auto before = snapshot(core);
  try {
    core.plan(layer, experts);
    FAIL("plan accepted a bad request: " << message);
  } catch (const PagerError& e) {
    CHECK(std::string(e.what()) == message);
    CHECK(e.kind() == kind);
  }
  CHECK(snapshot(core) == before);
}

}  // namespace

TEST_CASE("a plan reports hits and misses with slots and the evicted expert") {
  PagerCore core(small_geometry(3));
  const Plan& first = core.plan(1, std::vector<int32_t>{5, 2});
  REQUIRE(first.size() == 2);
  CHECK(first.misses == 2);
  CHECK(first.fill != 0);
  CHECK_FALSE(first.hit(0));
  CHECK(first.part(0).slot == 0);  // the lowest empty slots, in request order
  CHECK(first.part(1).slot == 1);
  CHECK(first.part(0).evicted == -1);
  CHECK(first.part(0).pending);
  CHECK(core.pool(1).state(0) == SlotState::Filling);
  CHECK(core.commit_fill(1, first.fill) == 2);
  CHECK(core.pool(1).state(0) == SlotState::Valid);

  const Plan& second = acquire(core, 1, {2, 7, 5});
  CHECK(second.hit(0));
  CHECK(second.hit(2));
  CHECK_FALSE(second.hit(1));
  CHECK(second.part(1).slot == 2);
  CHECK(second.part(0).slot == 1);
  CHECK_FALSE(second.part(0).pending);

  // Full pool: expert 3 evicts the least recently used, which is expert 2 (hit before 7 and 5).
  const Plan& third = acquire(core, 1, {3});
  CHECK(third.part(0).evicted == 2);
  CHECK(third.part(0).slot == 1);
  CHECK(core.pool(1).slot_of(2) == -1);
  CHECK(core.pool(1).expert_of(1) == 3);
}

TEST_CASE("lru order inside one request: hits are touched first, then misses in request order") {
  PagerCore core(small_geometry(4));
  acquire(core, 1, {0, 1, 2, 3});  // recency now 0 < 1 < 2 < 3
  acquire(core, 1, {1, 0});        // hits in request order: 2 < 3 < 1 < 0
  // Misses 6 then 7: 6 evicts 2, then 7 evicts 3.
  const Plan& plan = acquire(core, 1, {6, 0, 7});
  CHECK(plan.part(0).evicted == 2);
  CHECK(plan.part(2).evicted == 3);
  // 0 was a hit in this request and was accessed before the misses: next victim is 1.
  CHECK(acquire(core, 1, {4}).part(0).evicted == 1);
}

TEST_CASE("a request never evicts one of its own experts") {
  PagerCore core(small_geometry(3));
  acquire(core, 1, {0, 1, 2});
  // 0 is the oldest but requested again; the two misses must evict 1 and 2.
  const Plan& plan = acquire(core, 1, {3, 0, 4});
  CHECK(plan.part(0).evicted == 1);
  CHECK(plan.part(2).evicted == 2);
  CHECK(core.pool(1).slot_of(0) >= 0);
}

TEST_CASE("plan validates before it mutates: every bad request leaves state untouched") {
  PagerCore core(small_geometry(3));
  acquire(core, 1, {0, 1, 2});
  acquire(core, 2, {4});
  check_refused(core, 7, {1}, "layer 7 is out of range (the model has 3 layers)");
  check_refused(core, 0, {1}, "layer 0 has no slot pool (its routed experts are not paged)");
  check_refused(core, 1, {1, 2, 3, 4}, "layer 1: request of 4 experts exceeds the layer's 3 slots");
  check_refused(core, 1, {3, 9}, "layer 1: expert 9 is out of range (the layer has 8 experts)");
  check_refused(core, 1, {3, -1}, "layer 1: expert -1 is out of range (the layer has 8 experts)");
  // The duplicate comes after a miss that would otherwise already have evicted something.
  check_refused(core, 1, {5, 6, 5}, "layer 1: expert 5 is requested twice in one request");
}

TEST_CASE("an expert missing from the catalog is refused naming layer and expert") {
  auto g = small_geometry(3);
  g.in_catalog.assign(3 * 8, 1);
  g.in_catalog[2 * 8 + 6] = 0;
  PagerCore core(g);
  check_refused(core, 2, {1, 6}, "layer 2: expert 6 is not in the expert catalog");
  acquire(core, 1, {6});  // the same expert of another layer is fine
}

TEST_CASE("ownership refusal: an expert this rank does not own is never mapped") {
  auto g = small_geometry(4);
  g.owned = {1, 1, 1, 1, 0, 0, 0, 0};  // this rank owns experts 0..3
  PagerCore core(g);
  acquire(core, 1, {0, 1});
  check_refused(core, 1, {2, 5}, "layer 1: expert 5 is not owned by this rank (expert parallelism); refusing to map it",
                ErrorKind::NotOwned);
  CHECK(core.pool(1).slot_of(2) == -1);
  // A prediction of an unowned expert is skipped, not mapped.
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{6, 3});
  REQUIRE(pre.size() == 1);
  CHECK(pre.experts[0] == 3);
  CHECK(core.pool(1).slot_of(6) == -1);
}

TEST_CASE("the dirty flag is set only when the layer's expert to slot mapping changed") {
  PagerCore core(small_geometry(3));
  CHECK(acquire(core, 1, {0, 1}).table_changed);        // first upload
  CHECK_FALSE(acquire(core, 1, {1, 0}).table_changed);  // pure hits
  CHECK_FALSE(acquire(core, 1, {1}).table_changed);
  CHECK(acquire(core, 1, {2}).table_changed);  // into an empty slot
  CHECK(acquire(core, 1, {3}).table_changed);  // eviction
  CHECK_FALSE(acquire(core, 1, {3, 2}).table_changed);
  CHECK(acquire(core, 2, {3}).table_changed);  // layers are independent
  CHECK_FALSE(acquire(core, 2, {}).table_changed);
  // A prefetch (in a new token, so nothing is protected) changes the mapping; the next plan of
  // that layer reports it.
  core.begin_token(1);
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{7});
  REQUIRE(pre.size() == 1);
  core.commit_fill(1, pre.fill);
  CHECK(acquire(core, 1, {3}).table_changed);
  CHECK(core.layer_counters(1).table_changes == 4);
}

TEST_CASE("a failed fill marks every slot it was filling empty and the next access reads again") {
  PagerCore core(small_geometry(4));
  acquire(core, 1, {0, 1});
  const Plan& plan = core.plan(1, std::vector<int32_t>{0, 2, 3});
  const uint64_t fill = plan.fill;
  const uint32_t slot2 = plan.part(1).slot, slot3 = plan.part(2).slot;
  CHECK(core.invalidate_fill(1, fill) == 2);
  CHECK(core.pool(1).state(slot2) == SlotState::Empty);
  CHECK(core.pool(1).state(slot3) == SlotState::Empty);
  CHECK(core.pool(1).slot_of(2) == -1);
  CHECK(core.pool(1).slot_of(3) == -1);
  CHECK(core.pool(1).state(core.pool(1).slot_of(0)) == SlotState::Valid);  // the hit is untouched
  CHECK(core.commit_fill(1, fill) == 0);  // a late completion cannot resurrect the slots
  CHECK(core.layer_counters(1).fills_failed == 2);
  const Plan& again = acquire(core, 1, {2, 3});
  CHECK_FALSE(again.hit(0));
  CHECK_FALSE(again.hit(1));
  CHECK(again.table_changed);
}

TEST_CASE("a slot being filled is never evicted; too few evictable slots is a slots-busy error") {
  PagerCore core(small_geometry(2));
  acquire(core, 1, {0});
  const Plan& pending = core.plan(1, std::vector<int32_t>{1});  // slot 1 filling
  const uint64_t fill = pending.fill;
  check_refused(core, 1, {2, 3},
                "layer 1: 2 misses need slots but only 1 can be evicted (1 slots are still being filled); wait for "
                "those fills and retry",
                ErrorKind::SlotsBusy);
  // A hit on the filling slot is reported pending with the fill to wait for.
  const Plan& hit = core.plan(1, std::vector<int32_t>{1});
  CHECK(hit.hit(0));
  CHECK(hit.part(0).pending);
  CHECK(hit.part(0).fill == fill);
  CHECK(hit.fill == 0);
  core.commit_fill(1, fill);
  CHECK(acquire(core, 1, {2, 3}).misses == 2);
}

TEST_CASE("two pools per layer: gate_up and down are planned together and can diverge after a failure") {
  PagerCore core(small_geometry(3, PolicyKind::Lru, 2));
  const Plan& p = core.plan(1, std::vector<int32_t>{4, 5});
  CHECK(p.n_pools == 2);
  CHECK(p.part(0, 0).slot == p.part(0, 1).slot);
  const uint64_t fill = p.fill;
  core.commit_fill(1, fill);
  CHECK(core.pool(1, 0).state(0) == SlotState::Valid);
  CHECK(core.pool(1, 1).state(0) == SlotState::Valid);
  CHECK(acquire(core, 1, {4, 5}).misses == 0);
  CHECK(core.layer_counters(1).hits == 2);

  // A new expert whose down part fails to load: gate_up keeps it, down forgets it.
  const Plan& q = core.plan(1, std::vector<int32_t>{6});
  const uint64_t qf = q.fill;
  CHECK(core.commit_fill(1, qf, 0) == 1);   // parts complete separately: gate_up landed
  CHECK(core.invalidate_fill(1, qf) == 1);  // only the down slot was still filling
  CHECK(core.pool(1, 0).slot_of(6) >= 0);
  CHECK(core.pool(1, 1).slot_of(6) == -1);
  const Plan& r = acquire(core, 1, {6});
  CHECK(r.part(0, 0).hit);
  CHECK_FALSE(r.part(0, 1).hit);
  CHECK_FALSE(r.hit(0));  // an expert hits only when every part does
  CHECK(r.misses == 1);
}

TEST_CASE("construction refuses geometries that cannot work, naming the field") {
  auto g = small_geometry(0);
  CHECK_THROWS_WITH(PagerCore{g}, "pager core: slots_per_layer must be in 1..8, got 0");
  g = small_geometry(9);
  CHECK_THROWS_WITH(PagerCore{g}, "pager core: slots_per_layer must be in 1..8, got 9");
  g = small_geometry(2, PolicyKind::Lru, 3);
  CHECK_THROWS_WITH(PagerCore{g}, "pager core: pools_per_layer must be 1 or 2, got 3");
  g = small_geometry(2, PolicyKind::Belady);
  CHECK_THROWS_WITH(PagerCore{g}, "pager core: policy 'belady' needs the future and exists only in `moepage simulate`");
  g = small_geometry(2);
  g.owned = {1, 1};
  CHECK_THROWS_WITH(PagerCore{g}, "pager core: owned has 2 entries, expected one per expert (8)");
}

TEST_CASE("per-layer and total counters add up") {
  PagerCore core(small_geometry(2));
  acquire(core, 1, {0, 1});
  acquire(core, 1, {1, 2});
  acquire(core, 2, {3});
  const auto l1 = core.layer_counters(1);
  CHECK(l1.accesses == 4);
  CHECK(l1.hits == 1);
  CHECK(l1.misses == 3);
  const auto total = core.total_counters();
  CHECK(total.accesses == 5);
  CHECK(total.misses == 4);
  CHECK(core.layer_counters(0).accesses == 0);
}

TEST_CASE("the core allocates nothing after construction on plans, fills, prefetches and failures") {
  for (uint32_t pools : {1u, 2u}) {
    for (auto kind : {PolicyKind::Lru, PolicyKind::Lfu, PolicyKind::Lfru}) {
      CAPTURE(pools);
      CAPTURE(policy_name(kind));
      PagerCore core(small_geometry(4, kind, pools));
      int32_t request[3];
      const int32_t ranked[4] = {0, 4, 6, 2};
      moepage::test::AllocationScope scope;
      uint64_t x = 12345;
      for (uint64_t token = 0; token < 200; ++token) {
        core.begin_token(token);
        for (uint32_t layer = 1; layer < 3; ++layer) {
          // Three distinct experts from a small LCG.
          x = x * 6364136223846793005ull + 1442695040888963407ull;
          request[0] = int32_t((x >> 33) % 8);
          request[1] = int32_t((uint64_t(request[0]) + 1 + (x >> 40) % 7) % 8);
          request[2] = int32_t((x >> 50) % 8);
          while (request[2] == request[0] || request[2] == request[1]) request[2] = (request[2] + 1) % 8;
          const Plan& plan = core.plan(layer, request);
          const uint64_t fill = plan.fill;
          if (token % 17 == 3) core.invalidate_fill(layer, fill);
          else core.commit_fill(layer, fill);
          const Plan& pre = core.prefetch(layer, ranked);
          if (pre.fill) core.commit_fill(layer, pre.fill);
        }
        (void)core.total_counters();
      }
      CHECK(scope.count() == 0);
      CHECK(core.total_counters().accesses == 200 * 2 * 3);
    }
  }
}
