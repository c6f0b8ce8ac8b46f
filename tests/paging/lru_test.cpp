// The lru pager's paging: right bytes in every slot, counters, table changes, traces, and the
// hint path that stages experts without evicting what the current token requested.
#include <doctest/doctest.h>

#include <random>

#include "paging_fixture.hpp"

using namespace moepage::test;

TEST_CASE("at the minimum budget every acquired slot holds the requested expert's bytes") {
  for (const char* transport_name : {"pread", "pinned-async"}) {
    CAPTURE(transport_name);
    PagingBench bench(transport_name, "2");
    auto pager = bench.pager_with_slots(2);
    CHECK(pager.stats().slots_per_layer == 2);
    std::mt19937 rng(7);
    uint64_t accesses = 0;
    for (uint64_t token = 0; token < 40; ++token) {
      pager.begin_token(token);
      for (uint32_t layer = 1; layer < 4; ++layer) {
        const int32_t a = int32_t(rng() % 8);
        const int32_t b = int32_t((a + 1 + rng() % 7) % 8);
        auto got = acquire(pager, layer, {a, b});
        REQUIRE(bench.model.slot_holds(got.slots[0], layer, uint32_t(a)));
        REQUIRE(bench.model.slot_holds(got.slots[1], layer, uint32_t(b)));
        accesses += 2;
      }
    }
    const mp_pager_stats s = pager.stats();
    CHECK(s.accesses == accesses);
    CHECK(s.hits + s.misses == accesses);
    CHECK(s.misses > 0);
    CHECK(s.bytes_read == s.misses * (1000 + 600));
    CHECK(s.load_bytes_read == 0);
    CHECK(s.pool_bytes == bench.model.budget_for(2));
    uint64_t per_layer = 0;
    for (uint32_t layer = 0; layer < 4; ++layer) per_layer += pager.layer_stats(layer).accesses;
    CHECK(per_layer == accesses);
  }
}

TEST_CASE("a repeated request is all hits and does not report a changed pointer table") {
  PagingBench bench;
  auto pager = bench.pager_with_slots(3);
  CHECK(acquire(pager, 1, {4, 5}).result.table_changed == 1);
  const uint64_t misses = pager.stats().misses;
  CHECK(acquire(pager, 1, {5, 4}).result.table_changed == 0);
  CHECK(pager.stats().misses == misses);
}

TEST_CASE("a hint never evicts an expert the current token already acquired") {
  PagingBench bench("pinned-async", "2");
  auto pager = bench.pager_with_slots(3);
  pager.begin_token(0);
  acquire(pager, 1, {0, 1});
  const int32_t ranked[] = {5, 6, 7};
  REQUIRE(pager.hint(1, ranked));
  // Only the one free slot could be used: experts 0 and 1 stay, 5 is staged.
  CHECK(pager.stats().prefetch_issued == 1);
  auto again = acquire(pager, 1, {0, 5});
  CHECK(bench.model.slot_holds(again.slots[0], 1, 0));
  CHECK(bench.model.slot_holds(again.slots[1], 1, 5));
  const mp_pager_stats s = pager.stats();
  CHECK(s.misses == 2);  // only the first acquire missed
  CHECK(s.prefetch_used == 1);
}

TEST_CASE("the trace has one event per access with its hit and prefetched flags") {
  PagingBench bench;
  auto pager = bench.pager_with_slots(3);
  std::vector<mp_trace_event> events;
  REQUIRE(pager.set_trace(
      [](void* ctx, const mp_trace_event* e) { static_cast<std::vector<mp_trace_event>*>(ctx)->push_back(*e); },
      &events));
  pager.begin_token(3);
  acquire(pager, 2, {1, 2});
  const int32_t ranked[] = {6};
  pager.hint(2, ranked);
  pager.begin_token(4);
  acquire(pager, 2, {2, 6});
  REQUIRE(events.size() == 4);
  CHECK(events[0].token == 3);
  CHECK(events[0].layer == 2);
  CHECK(events[0].expert == 1);
  CHECK(events[0].hit == 0);
  CHECK(events[2].token == 4);
  CHECK(events[2].expert == 2);
  CHECK(events[2].hit == 1);
  CHECK(events[2].prefetched == 0);
  CHECK(events[3].expert == 6);
  CHECK(events[3].hit == 1);
  CHECK(events[3].prefetched == 1);
}

TEST_CASE("acquire on a layer without routed experts names the layer") {
  PagingBench bench;
  auto pager = bench.pager_with_slots(2);
  CHECK_THROWS_WITH(acquire(pager, 0, {1, 2}), doctest::Contains("layer 0 has no routed experts"));
  CHECK_THROWS_WITH(acquire(pager, 1, {1, 9}), doctest::Contains("expert 9"));
}
