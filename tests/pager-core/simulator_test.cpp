// The simulator: Belady is a floor for every policy, and simulated lru equals the live core's lru.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core_fixture.hpp"
#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/simulator.hpp"
#include "trace_fixture.hpp"

using namespace moepage::pager;
using namespace moepage::test::policies;
using moepage::test::acquire;
using moepage::test::cyclic_trace;
using moepage::test::random_trace;

TEST_CASE("a hand-checked trace gives the expected misses per policy") {
  // One layer, 2 slots, requests of one expert: 0 1 2 0 1 2 ... lru misses every time, belady
  // keeps one of them and misses about half.
  const Trace t = cyclic_trace(4, 3, 1, 12);
  CHECK(simulate(t, 2, kLru).misses == 12);
  const SimResult b = simulate(t, 2, kBelady);
  CHECK(b.misses == 7);  // 3 cold misses, then every other access
  CHECK(b.accesses == 12);
  CHECK(b.layers[0].misses == 7);
  CHECK(simulate(t, 3, kLru).misses == 3);   // everything fits: only cold misses
  CHECK(simulate(t, 100, kLru).slots == 4);  // capped at the expert count
  CHECK_THROWS_WITH(simulate(t, 0, kLru), "simulate: slots per layer must be at least 1");
}

TEST_CASE("belady is never above lru, lfu or lfru on random traces over many seeds") {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const uint32_t experts = 16 + uint32_t(seed % 3) * 16, top_k = 2 + uint32_t(seed % 4);
    const Trace t = random_trace(seed, 2, experts, top_k, 120, 8 + uint32_t(seed % 5) * 8);
    for (uint32_t slots : {top_k, top_k + 3, experts / 2}) {
      CAPTURE(seed);
      CAPTURE(slots);
      const uint64_t belady = simulate(t, slots, kBelady).misses;
      CHECK(belady <= simulate(t, slots, kLru).misses);
      CHECK(belady <= simulate(t, slots, kLfu).misses);
      CHECK(belady <= simulate(t, slots, kLfru).misses);
      CHECK(belady <= simulate(t, slots, PolicySpec{PolicyKind::Lfru, 1.5}).misses);
    }
  }
}

TEST_CASE("belady is never above the others on adversarial traces") {
  for (uint32_t top_k : {1u, 2u, 3u}) {
    for (uint32_t slots = top_k; slots <= 8; ++slots) {
      CAPTURE(top_k);
      CAPTURE(slots);
      const Trace traces[] = {cyclic_trace(16, slots + 1, top_k, 60), cyclic_trace(16, slots + top_k, top_k, 60),
                              moepage::test::scan_trace(24, slots, top_k, 80),
                              moepage::test::phase_trace(16, top_k, 80)};
      for (const Trace& t : traces) {
        const uint64_t belady = simulate(t, slots, kBelady).misses;
        for (const auto& p : {kLru, kLfu, kLfru}) CHECK(belady <= simulate(t, slots, p).misses);
      }
    }
  }
  // One expert at a time cycling through one more than the cache: lru misses every access,
  // belady keeps all but one slot useful.
  for (uint32_t slots = 2; slots <= 8; ++slots) {
    const Trace t = cyclic_trace(16, slots + 1, 1, 60);
    CHECK(simulate(t, slots, kLru).misses == 60);
    CHECK(simulate(t, slots, kBelady).misses < 40);
  }
}

TEST_CASE("a scan of one-off experts flushes lru but not lfu") {
  const Trace t = moepage::test::scan_trace(40, 4, 2, 200);
  CHECK(simulate(t, 6, kLfu).misses < simulate(t, 6, kLru).misses);
}

TEST_CASE("requests larger than the slot count are served in chunks") {
  Trace t;
  t.meta = {1, 8, 0};
  for (uint32_t e = 0; e < 6; ++e) t.rows.push_back({0, 0, e, 0, 0});  // a prefill band of 6
  for (uint32_t e = 0; e < 6; ++e) t.rows.push_back({1, 0, e, 0, 0});
  const SimResult r = simulate(t, 4, kLru);
  CHECK(r.accesses == 12);
  // Token 0: 0-3 miss, 4-5 miss evicting 0-1. Token 1: 0-3 hit 2,3 and miss 0,1 (evicting 4,5);
  // 4-5 miss again.
  CHECK(r.misses == 10);
  CHECK(simulate(t, 6, kLru).misses == 6);
}

TEST_CASE("simulated lru equals the live core's lru on the trace the core wrote") {
  for (uint64_t seed : {3u, 11u, 29u}) {
    for (auto policy : {PolicyKind::Lru, PolicyKind::Lfu, PolicyKind::Lfru}) {
      CAPTURE(seed);
      CAPTURE(policy_name(policy));
      const Trace routing = random_trace(seed, 3, 8, 3, 150);
      // Live: layer 0 dense, layers 1 and 2 paged with 4 slots. Record what the core saw.
      PagerCore core(moepage::test::small_geometry(4, policy));
      std::string text = trace_header(TraceMeta{3, 8, 3});
      char buf[64];
      std::vector<int32_t> request;
      size_t i = 0;
      while (i < routing.rows.size()) {
        const TraceRow& first = routing.rows[i];
        size_t end = i;
        request.clear();
        while (end < routing.rows.size() && routing.rows[end].token == first.token &&
               routing.rows[end].layer == first.layer)
          request.push_back(int32_t(routing.rows[end++].expert));
        if (first.layer == 0 || (i > 0 && routing.rows[i - 1].token != first.token)) core.begin_token(first.token);
        if (first.layer != 0) {
          const Plan& plan = acquire(core, first.layer, request);
          for (uint32_t k = 0; k < plan.size(); ++k) {
            const TraceRow row{first.token, first.layer, uint32_t(plan.experts[k]), uint8_t(plan.hit(k)), 0};
            text.append(buf, format_trace_row(row, true, buf));
          }
        }
        i = end;
      }
      const Trace recorded = parse_trace(text, "live.csv");
      const SimResult live = recorded_result(recorded);
      const SimResult sim = simulate(recorded, 4, PolicySpec{policy, 0});
      CHECK(live.misses == core.total_counters().misses);
      CHECK(sim.misses == live.misses);
      for (uint32_t l = 0; l < 3; ++l) CHECK(sim.layers[l].misses == live.layers[l].misses);
      CHECK(sim.accesses == live.accesses);
    }
  }
}
