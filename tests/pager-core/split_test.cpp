// Per-layer slot counts in the core, and the greedy split of a slot budget by each layer's
// simulated reuse (split.hpp).
#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "core_fixture.hpp"
#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/simulator.hpp"
#include "moepage/pager_core/split.hpp"
#include "trace_fixture.hpp"

using namespace moepage::pager;

using moepage::test::policies::kLru;

namespace {

// Two layers, top-2 of 16 experts per token: layer 0 draws from a small hot set most of the time
// (much reuse), layer 1 draws uniformly from all 16 (little reuse).
Trace skewed_and_flat(uint32_t tokens) {
  Trace t;
  t.meta = {2, 16, 2};
  moepage::test::Lcg rng{12345};
  for (uint32_t tok = 0; tok < tokens; ++tok) {
    for (uint32_t l = 0; l < 2; ++l) {
      uint32_t first = 0;
      for (uint32_t k = 0; k < 2; ++k) {
        uint32_t e;
        do {
          const bool hot = l == 0 && rng.next() % 10 < 9;
          e = uint32_t(rng.next() % (hot ? 4 : 16));
        } while (k == 1 && e == first);
        first = e;
        t.rows.push_back({tok, l, e, 0, 0});
      }
    }
  }
  return t;
}

// Two layers of `experts` experts, top-2: each token draws two distinct experts per layer, layer 0
// from its first hot_range experts, layer 1 from all. hinted: layer 0's draws are hinted first.
Trace two_draws(uint32_t experts, uint32_t hot_range, uint32_t tokens, bool hinted, uint32_t seed) {
  Trace t;
  t.meta = {2, experts, 2};
  moepage::test::Lcg rng{seed};
  for (uint32_t tok = 0; tok < tokens; ++tok)
    for (uint32_t l = 0; l < 2; ++l) {
      const uint32_t range = l == 0 ? hot_range : experts;
      const uint32_t a = uint32_t(rng.next() % range);
      uint32_t b;
      do b = uint32_t(rng.next() % range);
      while (b == a);
      if (hinted && l == 0) {
        t.hints.push_back({tok, 0, a, 0, t.rows.size(), HintSource::Arch});
        t.hints.push_back({tok, 0, b, 1, t.rows.size(), HintSource::Arch});
      }
      t.rows.push_back({tok, l, a, 0, 0});
      t.rows.push_back({tok, l, b, 0, 0});
    }
  return t;
}

}  // namespace

TEST_CASE("the core sizes each layer's pools from layer_slots and bounds requests by the layer's own slots") {
  CoreGeometry g = moepage::test::small_geometry(4);
  g.layer_slots = {0, 2, 6};  // layer 0 is not paged: its entry is not read
  PagerCore core(g);
  CHECK(core.slots(1) == 2);
  CHECK(core.slots(2) == 6);
  CHECK(core.pool(1).n_slots() == 2);
  CHECK(core.pool(2).n_slots() == 6);
  CHECK(core.slots_per_layer() == 4);  // the uniform count the total came from
  CHECK(core.min_layer_slots() == 2);  // what stats report: the largest request every layer serves
  const std::vector<int32_t> five = {0, 1, 2, 3, 4};
  CHECK_THROWS_WITH(core.plan(1, std::span<const int32_t>(five.data(), 3)),
                    "layer 1: request of 3 experts exceeds the layer's 2 slots");
  const Plan& p = core.plan(2, five);
  CHECK(p.misses == 5);
  core.commit_fill(2, p.fill);

  CoreGeometry bad = moepage::test::small_geometry(4);
  bad.layer_slots = {4, 4};
  CHECK_THROWS_WITH(PagerCore{bad}, "pager core: layer_slots has 2 entries, expected one per layer (3)");
  bad.layer_slots = {0, 9, 4};
  CHECK_THROWS_WITH(PagerCore{bad}, "pager core: layer 1: slots must be in 1..8, got 9");
  bad.layer_slots = {0, 0, 4};
  CHECK_THROWS_WITH(PagerCore{bad}, "pager core: layer 1: slots must be in 1..8, got 0");
}

TEST_CASE("the greedy split gives more slots to the layer with more reuse, and misses no more than uniform") {
  const Trace t = skewed_and_flat(400);
  SplitRequest request;
  request.total_slots = 12;  // uniform: 6 per layer
  request.min_slots = 2;
  request.policy = kLru;
  const SplitPlan plan = split_slots_by_reuse(t, request);
  REQUIRE(plan.slots.size() == 2);
  CHECK(plan.total_slots == 12);
  CHECK(plan.slots[0] + plan.slots[1] == 12);
  CHECK(plan.slots[0] >= 2);
  CHECK(plan.slots[1] >= 2);
  // Layer 0's hot set fits in 4 slots; its marginal gain beyond that is small, layer 1's is not.
  // So greedy first fills layer 0's hot set, then gives layer 1 the rest: layer 0 ends with about
  // its hot set and layer 1 with more. What matters is the outcome: fewer misses than uniform, and
  // the simulated misses are the ones reported.
  const SimResult uniform = simulate(t, 6, kLru);
  const SimResult split = simulate_layers(t, plan.slots, kLru);
  CHECK(split.layers[0].misses == plan.misses[0]);
  CHECK(split.layers[1].misses == plan.misses[1]);
  CHECK(split.misses <= uniform.misses);
  // simulate with split_by_trace is the same split.
  PolicySpec by_trace = kLru;
  by_trace.split_by_trace = true;
  const SimResult same = simulate(t, 6, by_trace);
  CHECK(same.layer_slots == plan.slots);
  CHECK(same.misses == split.misses);
  CHECK(same.slots == 6);
}

TEST_CASE("a tight budget goes to the layer whose misses drop the most: the one with more reuse") {
  const Trace t = skewed_and_flat(400);
  SplitRequest request;
  request.total_slots = 6;  // 2 + 2 minimum, 2 to share
  request.min_slots = 2;
  request.policy = kLru;
  const SplitPlan plan = split_slots_by_reuse(t, request);
  CHECK(plan.slots[0] == 4);  // the hot set of layer 0 fits: the largest gain per slot
  CHECK(plan.slots[1] == 2);
  CHECK(simulate_layers(t, plan.slots, kLru).misses < simulate(t, 3, kLru).misses);
}

TEST_CASE("a layer without accesses gets nothing; hinted layers keep the minimum; bad requests are refused") {
  Trace t = skewed_and_flat(200);
  t.meta.layers = 3;  // layer 2 has no rows
  SplitRequest request;
  request.total_slots = 8;
  request.min_slots = 2;
  request.policy = kLru;
  const SplitPlan plan = split_slots_by_reuse(t, request);
  CHECK(plan.slots[2] == 0);
  CHECK(plan.slots[0] + plan.slots[1] == 8);

  // A layer whose every expert is hinted before its access never misses beyond the first use of
  // each expert, so under the miss objective it gains nothing from slots above the minimum.
  Trace hinted;
  hinted.meta = {2, 16, 2};
  for (uint32_t tok = 0; tok < 200; ++tok) {
    const uint32_t a = (tok * 2) % 16, b = (tok * 2 + 1) % 16;
    hinted.hints.push_back({tok, 0, a, 0, hinted.rows.size(), HintSource::Arch});
    hinted.hints.push_back({tok, 0, b, 1, hinted.rows.size(), HintSource::Arch});
    hinted.rows.push_back({tok, 0, a, 0, 0});
    hinted.rows.push_back({tok, 0, b, 0, 0});
    hinted.rows.push_back({tok, 1, (tok * 7) % 5, 0, 0});
    hinted.rows.push_back({tok, 1, 5 + (tok * 3) % 5, 0, 0});
  }
  request.total_slots = 16;
  request.objective = SplitObjective::Misses;
  const SplitPlan h = split_slots_by_reuse(hinted, request);
  CHECK(h.slots[0] == 2);
  CHECK(h.slots[1] == 14);
  CHECK(h.misses[0] == 0);

  request.objective = SplitObjective::Reads;
  request.total_slots = 3;
  CHECK_THROWS_WITH(split_slots_by_reuse(hinted, request),
                    "slot split: 3 slots cannot give each of 2 layers its minimum of 2");
  request.total_slots = 16;
  request.min_slots = 17;
  CHECK_THROWS_WITH(split_slots_by_reuse(hinted, request),
                    "slot split: the minimum slots per layer must be in 1..16, got 17");
  request.min_slots = 2;
  request.layers = {1};
  CHECK_THROWS_WITH(split_slots_by_reuse(hinted, request), "slot split: the layer mask has 1 entries, expected 2");
  // Everything fits: each layer holds all its experts and the rest is not handed out.
  request.layers.clear();
  request.total_slots = 100;
  const SplitPlan all = split_slots_by_reuse(hinted, request);
  CHECK(all.slots == std::vector<uint32_t>{16, 16});
  CHECK(all.total_slots == 32);
  CHECK(format_layer_slots(all.slots) == "16,16");
}

TEST_CASE(
    "the reads objective counts a hinted layer's prefetches: its hot set gets slots the miss objective withholds") {
  // Layer 0: every access hinted first, two of a hot set of 6 experts per token. Layer 1: two of all
  // 16 experts, unhinted. Hinted, layer 0 never misses past each expert's first use, but at 2 slots it
  // reads both of its experts again nearly every token.
  const Trace t = two_draws(16, 6, 400, true, 777);
  SplitRequest request;
  request.total_slots = 16;
  request.min_slots = 2;
  request.policy = kLru;
  request.objective = SplitObjective::Misses;
  const SplitPlan by_misses = split_slots_by_reuse(t, request);
  request.objective = SplitObjective::Reads;
  const SplitPlan by_reads = split_slots_by_reuse(t, request);
  CHECK(by_misses.slots[0] == 2);
  CHECK(by_reads.slots[0] >= 6);  // the hot set fits: no re-reads
  CHECK(by_reads.slots[0] + by_reads.slots[1] == 16);
  // The plans report what the simulator measures at their slots, and each is best at its own cost.
  auto reads_of = [&](const SplitPlan& p) {
    const SimResult r = simulate_layers(t, p.slots, kLru);
    CHECK(r.layers[0].misses + r.layers[0].prefetch_reads == p.reads[0]);
    CHECK(r.layers[1].misses + r.layers[1].prefetch_reads == p.reads[1]);
    CHECK(r.layers[1].misses == p.misses[1]);
    return r.misses + r.prefetch_reads;
  };
  CHECK(reads_of(by_reads) < reads_of(by_misses));
  CHECK(by_misses.misses[0] + by_misses.misses[1] <= by_reads.misses[0] + by_reads.misses[1]);
  // simulate's split takes the objective from the policy spec.
  PolicySpec spec = kLru;
  spec.split_by_trace = true;
  CHECK(simulate(t, 8, spec).layer_slots == by_reads.slots);
  spec.split_objective = SplitObjective::Misses;
  CHECK(simulate(t, 8, spec).layer_slots == by_misses.slots);
}

TEST_CASE("a large budget goes out in steps and still spends it all, at no more cost than uniform") {
  // Two layers of 64 experts, 80 slots in all: steps of 80 / (2 x 16) = 2 slots. Layer 0 reuses
  // a set of 24, layer 1 draws from all 64.
  const Trace t = two_draws(64, 24, 600, false, 4242);
  SplitRequest request;
  request.total_slots = 80;
  request.min_slots = 2;
  request.policy = kLru;
  const SplitPlan plan = split_slots_by_reuse(t, request);
  CHECK(plan.total_slots == 80);
  CHECK(plan.slots[0] + plan.slots[1] == 80);
  CHECK(plan.slots[0] >= 24);  // layer 0's set fits whole
  CHECK((plan.slots[0] - 2) % 2 == 0);
  const SimResult split = simulate_layers(t, plan.slots, kLru);
  CHECK(split.layers[0].misses == plan.misses[0]);
  CHECK(split.layers[1].misses == plan.misses[1]);
  CHECK(split.misses + split.prefetch_reads <= simulate(t, 40, kLru).misses);
}
