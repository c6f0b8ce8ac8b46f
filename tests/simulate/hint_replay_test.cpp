// Trace v2 hint rows: they parse (and v1 traces still do), they reach the simulator as the
// prefetches a live pager makes, and Belady, which takes them as free loads, stays the floor.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../pager-core/trace_error.hpp"
#include "ablate/simulate_report.hpp"
#include "moepage/pager_core/simulator.hpp"
#include "moepage/pager_core/trace.hpp"

using namespace moepage::pager;

namespace {

std::string parse_error(const std::string& text) { return testing::trace_error(text, "h.trace"); }

uint64_t misses(const Trace& t, uint32_t slots, PolicyKind kind) { return simulate(t, slots, {kind, 0.0}).misses; }

}  // namespace

TEST_CASE("hint rows parse with their rank and the access row they precede") {
  const Trace t = parse_trace(
      "# moepage-trace v2 layers=2 experts=8 top_k=2\n"
      "token,layer,expert,hit,prefetched\n"
      "hint,0,0,5,0\n"
      "hint,0,0,6,1\n"
      "hint,0,1,2,0\n"
      "0,0,5,0,0\n"
      "0,1,2,1,1\n"
      "hint,3,0,7,0\n",
      "h.trace");
  CHECK(t.meta.version == 2);
  CHECK(t.has_outcomes);
  REQUIRE(t.rows.size() == 2);
  REQUIRE(t.hints.size() == 4);
  CHECK(t.hints[1].expert == 6);
  CHECK(t.hints[1].rank == 1);
  CHECK(t.hints[2].layer == 1);
  CHECK(t.hints[2].before_row == 0);
  CHECK(t.hints[3].token == 3);
  CHECK(t.hints[3].before_row == 2);  // after every access row
}

TEST_CASE("written hint rows and a v3 header parse back; a v1 header still loads") {
  const TraceMeta meta{4, 16, 2};
  std::string text = trace_header(meta);
  CHECK(text == "# moepage-trace v3 layers=4 experts=16 top_k=2\n");
  char buf[80];
  text.append(buf, format_trace_hint({7, 3, 15, 0, 0}, buf));
  text.append(buf, format_trace_hint({7, 3, 2, 1, 0}, buf));
  text.append(buf, format_trace_row({7, 3, 2, 1, 1}, true, buf));
  const Trace t = parse_trace(text, "w.trace");
  REQUIRE(t.hints.size() == 2);
  CHECK(t.hints[0].token == 7);
  CHECK(t.hints[0].expert == 15);
  CHECK(t.hints[1].rank == 1);
  CHECK(t.rows.size() == 1);
  char tiny[8];
  CHECK(format_trace_hint({7, 3, 15, 0, 0}, tiny) == 0);

  const Trace old = parse_trace("# moepage-trace v1 layers=1 experts=4\n0,0,1\n0,0,2\n", "old.trace");
  CHECK(old.meta.version == 1);
  CHECK(old.hints.empty());
  CHECK(trace_header(old.meta) == "# moepage-trace v1 layers=1 experts=4\n");
}

TEST_CASE("bad hint rows are refused naming the line") {
  const std::string v2 = "# moepage-trace v2 layers=2 experts=4\n";
  CHECK(parse_error("# moepage-trace v1 layers=2 experts=4\nhint,0,0,1,0\n") ==
        "h.trace line 2: hint rows need a v2 or v3 trace (the header says v1)");
  CHECK(parse_error(v2 + "hint,0,0,1\n") == "h.trace line 2: expected hint,token,layer,expert,rank, got 'hint,0,0,1'");
  CHECK(parse_error(v2 + "hint,0,2,1,0\n") == "h.trace line 2: layer 2 is out of range (layers=2)");
  CHECK(parse_error(v2 + "hint,0,0,4,0\n") == "h.trace line 2: expert 4 is out of range (experts=4)");
  CHECK(parse_error(v2 + "hint,0,0,1,1\n") ==
        "h.trace line 2: hint rank 1 continues no hint call (token 0, layer 0): a call starts at rank 0 and counts "
        "up by one");
  CHECK(parse_error(v2 + "hint,0,0,1,0\nhint,0,1,2,1\n") ==
        "h.trace line 3: hint rank 1 continues no hint call (token 0, layer 1): a call starts at rank 0 and counts "
        "up by one");
  CHECK(parse_error(v2 + "hint,0,0,1,0\nhint,0,0,2,2\n").find("hint rank 2 continues no hint call") !=
        std::string::npos);
  CHECK(parse_error(v2 + "hint,0,0,1,0\nhint,0,0,1,1\n") ==
        "h.trace line 3: expert 1 appears twice in one hint (token 0, layer 0)");
  CHECK(parse_error(v2 + "1,0,1\nhint,0,0,2,0\n") ==
        "h.trace line 3: token 0 comes after token 1 (tokens must not decrease)");
  CHECK(parse_error(v2 + "hint,2,0,2,0\n1,0,1\n") ==
        "h.trace line 3: token 1 comes after token 2 (tokens must not decrease)");
  // A hint between two accesses of one layer and token makes them two requests.
  CHECK(parse_error(v2 + "0,0,1\nhint,0,0,1,0\n0,0,1\n") == "(no error)");
  CHECK(parse_error(v2 + "0,0,1\n0,0,1\n") ==
        "h.trace line 3: expert 1 appears twice in one request (token 0, layer 0)");
}

TEST_CASE("a replayed hint prefetches like the live pager: capped by free slots, and free for belady") {
  // 2 slots. Token 0 hints 0,1,2: 0 and 1 fill both slots, then no slot can be had (the fills are
  // still in flight), so 2 is not placed. The access 2,0 then hits 0 and misses 2 (evicting 1,
  // never 0, which the request names).
  const Trace t = parse_trace(
      "# moepage-trace v2 layers=1 experts=4\n"
      "hint,0,0,0,0\nhint,0,0,1,1\nhint,0,0,2,2\n"
      "0,0,2\n0,0,0\n"
      "1,0,1\n",
      "cap.trace");
  for (PolicyKind kind : {PolicyKind::Lru, PolicyKind::Lfu, PolicyKind::Lfru}) {
    INFO(policy_name(kind));
    CHECK(misses(t, 2, kind) == 2);  // expert 2 at token 0, expert 1 at token 1 (2 evicted it)
  }
  // Belady: 2 and 0 were hinted since their last use (never used): free. 1 was hinted too, and is
  // requested for the first time at token 1: free as well.
  CHECK(misses(t, 2, PolicyKind::Belady) == 0);

  // Without the hint rows every first use misses.
  Trace bare = t;
  bare.hints.clear();
  CHECK(misses(bare, 2, PolicyKind::Lru) == 3);
  CHECK(misses(bare, 2, PolicyKind::Belady) == 3);
}

TEST_CASE("a hint may not evict what the current token requested, and it settles before the next access") {
  // 2 slots. Token 0 uses 0 and 1. Token 1 hints 3 (evicts lru 0), then uses 3 (a hit) and 0 (a
  // miss, evicting 1). Token 1 hints 2 after its accesses: 3 and 0 are protected for token 1, so
  // nothing is placed, and token 2's access to 2 misses.
  const Trace t = parse_trace(
      "# moepage-trace v2 layers=1 experts=4\n"
      "0,0,0\n0,0,1\n"
      "hint,1,0,3,0\n"
      "1,0,3\n1,0,0\n"
      "hint,1,0,2,0\n"
      "2,0,2\n",
      "protect.trace");
  const SimResult lru = simulate(t, 2, {PolicyKind::Lru, 0.0});
  CHECK(lru.accesses == 5);
  CHECK(lru.misses == 4);  // 0, 1, 0, 2 (3 was prefetched)
}

TEST_CASE("belady with hints stays at or below every policy on random traces with hints") {
  uint64_t state = 0x2545F4914F6CDD1Dull;
  auto next = [&](uint64_t n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state % n;
  };
  for (int round = 0; round < 60; ++round) {
    Trace t;
    const uint32_t layers = 1 + uint32_t(next(3)), experts = 4 + uint32_t(next(12)), top_k = 1 + uint32_t(next(3));
    t.meta = {layers, experts, top_k};
    std::vector<uint8_t> used(experts);
    for (uint64_t tok = 0; tok < 40; ++tok) {
      for (uint32_t l = 0; l < layers; ++l) {
        std::vector<uint32_t> request;
        std::fill(used.begin(), used.end(), 0);
        while (request.size() < top_k) {
          const uint32_t e = uint32_t((next(experts) * next(experts)) / experts);  // skewed
          if (!used[e]) request.push_back(e), used[e] = 1;
        }
        // Hash-like layers hint exactly what they use; others sometimes hint a guess.
        if (l == 0 || next(3) == 0) {
          std::vector<uint32_t> hint = l == 0 ? request : std::vector<uint32_t>{uint32_t(next(experts))};
          for (uint32_t r = 0; r < hint.size(); ++r) t.hints.push_back({tok, l, hint[r], r, t.rows.size()});
        }
        for (uint32_t e : request) t.rows.push_back({tok, l, e, 0, 0});
      }
    }
    for (uint32_t slots : {1u, 2u, 3u, 5u, 8u}) {
      const SimResult belady = simulate(t, slots, {PolicyKind::Belady, 0.0});
      for (PolicyKind kind : {PolicyKind::Lru, PolicyKind::Lfu, PolicyKind::Lfru}) {
        const SimResult other = simulate(t, slots, {kind, 0.0});
        INFO("round " << round << ", " << policy_name(kind) << " at " << slots << " slots");
        CHECK(belady.accesses == other.accesses);
        for (uint32_t l = 0; l < layers; ++l) CHECK(belady.layers[l].misses <= other.layers[l].misses);
      }
    }
  }
}

TEST_CASE("--layers keeps each kept layer's hints in place: the same misses as the whole trace") {
  const Trace t = parse_trace(
      "# moepage-trace v2 layers=3 experts=4\n"
      "hint,0,0,2,0\nhint,0,1,3,0\n"
      "0,0,0\n0,0,1\n0,1,0\n0,1,1\n0,2,0\n"
      "hint,1,0,3,0\nhint,1,1,2,0\n"
      "1,0,2\n1,0,3\n1,1,3\n1,1,2\n1,2,3\n",
      "layers.trace");
  moepage::ablate::SimulateRequest all, one;
  all.slots = one.slots = {2};
  all.policies = one.policies = moepage::ablate::parse_policy_list("lru,belady");
  one.layers = std::make_pair(1u, 1u);
  const auto whole = moepage::ablate::run_simulation(t, all);
  const auto kept = moepage::ablate::run_simulation(t, one);
  CHECK(kept.rows == 4);
  CHECK(kept.hint_rows == 2);
  for (size_t p = 0; p < 2; ++p) {
    CHECK(kept.cells[p].layers[1].misses == whole.cells[p].layers[1].misses);
    CHECK(kept.cells[p].misses == whole.cells[p].layers[1].misses);
  }
  // Layer 1 under lru: token 0 prefetches 3, then 0 and 1 miss (1 evicts the unused 3); token 1's
  // hint of 2 evicts 0, then 3 misses and 2 hits.
  CHECK(whole.cells[0].layers[1].misses == 3);
}
