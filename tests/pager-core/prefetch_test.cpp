// Prefetch bookkeeping: protection of the current token's experts, used and wasted counts.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core_fixture.hpp"
#include "moepage/pager_core/abi_stats.hpp"
#include "moepage/pager_core/errors.hpp"

using namespace moepage::pager;
using moepage::test::acquire;
using moepage::test::small_geometry;

TEST_CASE("a prefetch never evicts an expert the current token already requested") {
  PagerCore core(small_geometry(3));
  core.begin_token(0);
  acquire(core, 1, {0, 1, 2});
  core.begin_token(1);
  acquire(core, 1, {0, 1});  // this token needs 0 and 1; 2 is fair game
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{5, 6, 7});
  REQUIRE(pre.size() == 1);  // only one unprotected slot
  CHECK(pre.experts[0] == 5);
  CHECK(pre.part(0).evicted == 2);
  CHECK(core.pool(1).slot_of(0) >= 0);
  CHECK(core.pool(1).slot_of(1) >= 0);
  core.commit_fill(1, pre.fill);
  // Next token: protection is gone and the prefetch may evict again (lru: 0, then 1).
  core.begin_token(2);
  const Plan& next = core.prefetch(1, std::vector<int32_t>{6, 7});
  REQUIRE(next.size() == 2);
  CHECK(next.part(0).evicted == 0);
  CHECK(next.part(1).evicted == 1);
}

TEST_CASE("a prefetch never evicts a slot still being filled, including its own") {
  PagerCore core(small_geometry(2));
  core.begin_token(0);
  const Plan& demand = core.plan(1, std::vector<int32_t>{0});  // slot 0 filling
  const uint64_t demand_fill = demand.fill;
  core.begin_token(1);
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{3, 4, 5});
  REQUIRE(pre.size() == 1);  // slot 1 only; its own fill is not a victim for 4
  CHECK(pre.experts[0] == 3);
  CHECK(core.pool(1).state(0) == SlotState::Filling);
  core.commit_fill(1, demand_fill);
}

TEST_CASE("prefetch skips experts already mapped and refuses repeated or out-of-range predictions") {
  PagerCore core(small_geometry(4));
  acquire(core, 1, {1});
  core.begin_token(1);
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{1, 2});
  REQUIRE(pre.size() == 1);
  CHECK(pre.experts[0] == 2);
  CHECK_THROWS_WITH(core.prefetch(1, std::vector<int32_t>{3, 3}), "layer 1: predicted expert 3 is listed twice");
  CHECK_THROWS_WITH(core.prefetch(1, std::vector<int32_t>{8}),
                    "layer 1: predicted expert 8 is out of range (the layer has 8 experts)");
  CHECK_THROWS_WITH(core.prefetch(0, std::vector<int32_t>{1}),
                    "layer 0 has no slot pool (its routed experts are not paged)");
}

TEST_CASE("a prefetched expert later requested counts as used once; one evicted unrequested counts as wasted") {
  PagerCore core(small_geometry(3));
  core.begin_token(0);
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{4, 5});
  core.commit_fill(1, pre.fill);
  CHECK(core.layer_counters(1).prefetch_issued == 2);
  const Plan& use = acquire(core, 1, {4});
  CHECK(use.hit(0));
  CHECK(use.part(0).prefetched);                          // for the trace's prefetched column
  CHECK_FALSE(acquire(core, 1, {4}).part(0).prefetched);  // a second hit is not a second use
  auto c = core.layer_counters(1);
  CHECK(c.prefetch_used == 1);
  CHECK(c.prefetch_wasted == 0);
  CHECK(c.hits == 2);
  // Fill the pool so the unused prefetch (5) is evicted: lru order is 5 (inserted first) ...
  core.begin_token(1);
  acquire(core, 1, {6, 4});
  acquire(core, 1, {7, 4, 6});
  c = core.layer_counters(1);
  CHECK(c.prefetch_wasted == 1);
  CHECK(core.pool(1).slot_of(5) == -1);
  CHECK(c.prefetch_used + c.prefetch_wasted == c.prefetch_issued);
}

TEST_CASE("a failed prefetch leaves no valid slot and counts as failed, not wasted") {
  PagerCore core(small_geometry(3));
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{2});
  const uint64_t fill = pre.fill;
  CHECK(core.invalidate_fill(1, fill) == 1);
  const auto c = core.layer_counters(1);
  CHECK(c.prefetch_failed == 1);
  CHECK(c.prefetch_wasted == 0);
  CHECK_FALSE(acquire(core, 1, {2}).hit(0));
}

TEST_CASE("a demand hit on a prefetch still in flight waits for the prefetch's fill") {
  PagerCore core(small_geometry(3));
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{3});
  const uint64_t prefetch_fill = pre.fill;
  const Plan& plan = core.plan(1, std::vector<int32_t>{3, 4});
  CHECK(plan.hit(0));
  CHECK(plan.part(0).pending);
  CHECK(plan.part(0).fill == prefetch_fill);
  CHECK(plan.part(1).fill == plan.fill);
  CHECK(plan.fill != prefetch_fill);
}

TEST_CASE("the core's counters fill the ABI statistics structs") {
  PagerCore core(small_geometry(3));
  core.begin_token(0);
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{4});
  core.commit_fill(1, pre.fill);
  acquire(core, 1, {4, 5});
  acquire(core, 2, {1});
  mp_pager_stats stats{};
  stats.bytes_read = 77;  // owned by the plugin: left alone
  fill_abi_stats(core, stats);
  CHECK(stats.struct_size == sizeof(mp_pager_stats));
  CHECK(stats.accesses == 3);
  CHECK(stats.hits == 1);
  CHECK(stats.misses == 2);
  CHECK(stats.prefetch_issued == 1);
  CHECK(stats.prefetch_used == 1);
  CHECK(stats.table_uploads == 2);
  CHECK(stats.slots_per_layer == 3);
  CHECK(stats.bytes_read == 77);
  mp_pager_layer_stats layer{};
  fill_abi_layer_stats(core, 2, layer);
  CHECK(layer.accesses == 1);
  CHECK(layer.misses == 1);
}

TEST_CASE("with two pools a prefetch places both parts and a partly resident expert only where missing") {
  PagerCore core(small_geometry(3, PolicyKind::Lru, 2));
  core.begin_token(0);
  const Plan& q = core.plan(1, std::vector<int32_t>{6});
  const uint64_t qf = q.fill;
  core.commit_fill(1, qf, 0);      // gate_up landed
  core.invalidate_fill(1, qf, 1);  // down failed
  core.begin_token(1);
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{6, 2});
  REQUIRE(pre.size() == 2);
  CHECK(pre.part(0, 0).hit);        // expert 6's gate_up was already there
  CHECK_FALSE(pre.part(0, 1).hit);  // its down part is read again
  CHECK_FALSE(pre.part(1, 0).hit);
  CHECK_FALSE(pre.part(1, 1).hit);
  CHECK(core.commit_fill(1, pre.fill) == 3);
  CHECK(acquire(core, 1, {6, 2}).misses == 0);
}

TEST_CASE("a committed prefetch whose read then fails is dropped: empty, counted, read again on request") {
  PagerCore core(small_geometry(4));
  core.begin_token(0);
  const Plan& pre = core.prefetch(1, std::vector<int32_t>{5, 6});
  REQUIRE(pre.size() == 2);
  core.commit_fill(1, pre.fill);  // committed before the bytes landed, as the paged pager does
  REQUIRE(core.pool(1).slot_of(5) >= 0);
  const auto slot = uint32_t(core.pool(1).slot_of(5));
  CHECK(core.drop(1, 5) == 1);
  CHECK(core.pool(1).slot_of(5) == -1);
  CHECK(core.pool(1).state(slot) == SlotState::Empty);
  CHECK(core.drop(1, 5) == 0);  // no longer valid: nothing to drop
  CHECK(core.drop(1, 7) == 0);  // never mapped
  const LayerCounters c = core.layer_counters(1);
  CHECK(c.prefetch_failed == 1);
  CHECK(c.fills_failed == 1);
  const Plan& again = core.plan(1, std::vector<int32_t>{5, 6});
  CHECK_FALSE(again.hit(0));  // read again
  CHECK(again.hit(1));        // its neighbour of the same fill is untouched
  CHECK_THROWS_WITH(core.drop(1, 9), "layer 1: expert 9 is out of range (the layer has 8 experts)");
}
