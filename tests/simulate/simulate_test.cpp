// `moepage simulate`: Belady is the floor on the recorded routing trace and on random traces, the
// option parsers refuse nonsense, and the command's JSON matches the library's numbers.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ablate/simulate_report.hpp"
#include "ablate/trace_input.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

using namespace moepage;
using ablate::SimulateReport;
using ablate::SimulateRequest;

namespace {

// The recorded trace, decompressed once for the whole suite.
const pager::Trace& recorded() {
  static const pager::Trace trace =
      ablate::load_trace(test::source_path("tests/data/ds4-debian-tiny-heldout.trace.xz").string());
  return trace;
}

// Every non-Belady policy's misses against Belady's, per slot count, overall and per layer.
void check_belady_is_the_floor(const SimulateReport& r) {
  const size_t np = r.policies.size();
  REQUIRE(r.policies.back().kind == pager::PolicyKind::Belady);
  for (size_t s = 0; s < r.slots_requested.size(); ++s) {
    const pager::SimResult& belady = r.cells[s * np + np - 1];
    for (size_t p = 0; p + 1 < np; ++p) {
      const pager::SimResult& other = r.cells[s * np + p];
      INFO(ablate::policy_label(other.policy) << " at " << other.slots << " slots");
      CHECK(belady.accesses == other.accesses);
      CHECK(belady.misses <= other.misses);
      for (size_t l = 0; l < belady.layers.size(); ++l) CHECK(belady.layers[l].misses <= other.layers[l].misses);
    }
  }
}

// Skewed routing whose hot set moves: `layers` x `tokens` requests of top_k distinct experts.
pager::Trace random_trace(uint64_t seed, uint32_t layers, uint32_t experts, uint32_t top_k, uint32_t tokens) {
  pager::Trace t;
  t.meta = {layers, experts, top_k};
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 7;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  std::vector<uint8_t> used(experts);
  for (uint32_t tok = 0; tok < tokens; ++tok) {
    for (uint32_t l = 0; l < layers; ++l) {
      std::fill(used.begin(), used.end(), 0);
      for (uint32_t k = 0; k < top_k; ++k) {
        uint32_t e;
        do {
          const uint64_t r = next() % (uint64_t(experts) * experts);
          e = uint32_t((r % experts) * (r / experts) / experts + tok / 8) % experts;  // skew + drift
        } while (used[e]);
        used[e] = 1;
        t.rows.push_back({tok, l, e, 0, 0});
      }
    }
  }
  return t;
}

// The first `tokens` tokens of a trace: the suite replays a slice so it stays fast under the
// sanitizers (the full trace is 786,432 accesses; `moepage simulate` replays all of it).
pager::Trace prefix(const pager::Trace& t, uint64_t tokens) {
  pager::Trace out;
  out.meta = t.meta;
  out.has_outcomes = t.has_outcomes;
  for (const pager::TraceRow& r : t.rows) {
    if (r.token >= tokens) break;
    out.rows.push_back(r);
  }
  return out;
}

// The tokens from `from` on, renumbered from 0.
pager::Trace suffix(const pager::Trace& t, uint64_t from) {
  pager::Trace out;
  out.meta = t.meta;
  for (pager::TraceRow r : t.rows) {
    if (r.token < from) continue;
    r.token -= from;
    out.rows.push_back(r);
  }
  return out;
}

// A trace as the text format `moepage run --trace` writes.
std::string trace_text(const pager::Trace& t) {
  std::string text = pager::trace_header(t.meta) + "token,layer,expert\n";
  char buf[64];
  for (const pager::TraceRow& r : t.rows) text.append(buf, pager::format_trace_row(r, false, buf));
  return text;
}

}  // namespace

TEST_CASE("the recorded routing trace decompresses and parses with its header's geometry") {
  const pager::Trace& t = recorded();
  CHECK(t.meta.layers == 8);
  CHECK(t.meta.experts == 64);
  CHECK(t.meta.top_k == 6);
  CHECK(t.rows.size() % 6 == 0);
  CHECK(t.rows.size() > 100000);
}

TEST_CASE("belady is never above lru, lfu or lfru on the recorded trace at any slot count") {
  const pager::Trace slice = prefix(recorded(), 1024);  // 2 held-out windows of 512 tokens
  REQUIRE(slice.rows.size() == 1024u * 8 * 6);
  SimulateRequest req;
  req.slots = {6, 12, 24, 48};
  req.policies = ablate::parse_policy_list("lru,lfu,lfru,belady");
  const SimulateReport r = ablate::run_simulation(slice, req);
  check_belady_is_the_floor(r);
  // With as many slots as a token uses, every policy keeps exactly the current request: equal.
  // With more, learned routing leaves Belady strictly ahead of lru.
  CHECK(r.cells[0].misses == r.cells[3].misses);                 // 6 slots: lru == belady
  CHECK(r.cells[4 * 1 + 3].misses < r.cells[4 * 1 + 0].misses);  // 12 slots: belady < lru
}

TEST_CASE("cells replayed on several threads give the serial report; a cell's error reaches the caller") {
  const pager::Trace slice = prefix(recorded(), 512);
  SimulateRequest req;
  req.slots = {6, 12, 24};
  req.policies = ablate::parse_policy_list("lru,lfru,belady,lfru+split");
  req.threads = 1;
  const SimulateReport serial = ablate::run_simulation(slice, req);
  req.threads = 3;
  const SimulateReport parallel = ablate::run_simulation(slice, req);
  req.threads = 64;  // more threads than cells: one per cell
  const SimulateReport wide = ablate::run_simulation(slice, req);
  REQUIRE(parallel.cells.size() == serial.cells.size());
  REQUIRE(wide.cells.size() == serial.cells.size());
  for (size_t i = 0; i < serial.cells.size(); ++i) {
    CAPTURE(i);
    CHECK(parallel.cells[i].misses == serial.cells[i].misses);
    CHECK(parallel.cells[i].prefetch_reads == serial.cells[i].prefetch_reads);
    CHECK(parallel.cells[i].layer_slots == serial.cells[i].layer_slots);
    CHECK(wide.cells[i].misses == serial.cells[i].misses);
  }
  req.slots.push_back(0);  // refused by the cells that replay it (the CLI refuses it earlier)
  req.threads = 2;
  CHECK_THROWS_WITH(ablate::run_simulation(slice, req), "simulate: slots per layer must be at least 1");
}

TEST_CASE("belady is never above the other policies on random traces of several shapes") {
  const auto policies = ablate::parse_policy_list("lru,lfu,lfru,lfru:3,belady");
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const uint32_t experts = 16 + uint32_t(seed % 4) * 16, top_k = 2 + uint32_t(seed % 5);
    const pager::Trace t = random_trace(seed, 2, experts, top_k, 300);
    SimulateRequest req;
    req.slots = {top_k, top_k + 1, top_k * 2, experts / 2, experts};
    req.policies = policies;
    INFO("seed " << seed << ", " << experts << " experts, top-" << top_k);
    check_belady_is_the_floor(ablate::run_simulation(t, req));
  }
}

TEST_CASE("a layer range keeps only those layers' accesses") {
  const pager::Trace slice = prefix(recorded(), 512);
  SimulateRequest req{{8}, ablate::parse_policy_list("lru"), std::make_pair(2u, 3u)};
  const SimulateReport part = ablate::run_simulation(slice, req);
  const SimulateReport all = ablate::run_simulation(slice, {{8}, req.policies, std::nullopt});
  CHECK(part.rows == all.rows / 4);
  CHECK(part.cells[0].misses == all.cells[0].layers[2].misses + all.cells[0].layers[3].misses);
  req.layers = std::make_pair(0u, 8u);
  CHECK_THROWS_WITH_AS(ablate::run_simulation(slice, req), "--layers: the trace has layers 0-7", std::invalid_argument);
}

TEST_CASE("slot, policy and layer lists refuse what they cannot mean") {
  CHECK(ablate::parse_slot_list("6,12,24") == std::vector<uint32_t>{6, 12, 24});
  CHECK_THROWS_WITH_AS(ablate::parse_slot_list("6,0"), "--slots: a slot count must be at least 1",
                       std::invalid_argument);
  CHECK_THROWS_AS(ablate::parse_slot_list("6,,8"), std::invalid_argument);
  CHECK_THROWS_AS(ablate::parse_slot_list("many"), std::invalid_argument);
  CHECK(ablate::parse_policy_list("lfru:32")[0].half_life == 32.0);
  CHECK_THROWS_WITH_AS(ablate::parse_policy_list("lru,arc"),
                       "--policies: unknown policy 'arc' (expected lru, lfu, lfru, s3fifo, belady)",
                       std::invalid_argument);
  CHECK_THROWS_AS(ablate::parse_policy_list("lru:4"), std::invalid_argument);
  // POLICY+prefetch[:M]: the trace's predictions are prefetched, M per proposal (0: all).
  const auto with = ablate::parse_policy_list("lru+prefetch,lfru:16+prefetch:3,s3fifo");
  REQUIRE(with.size() == 3);
  CHECK(with[0].prefetch_predictions);
  CHECK(with[0].predict_m == 0);
  CHECK(with[1].kind == pager::PolicyKind::Lfru);
  CHECK(with[1].half_life == 16.0);
  CHECK(with[1].predict_m == 3);
  CHECK_FALSE(with[2].prefetch_predictions);
  CHECK(ablate::policy_label(with[1]) == "lfru:16+prefetch:3");
  CHECK_THROWS_WITH_AS(ablate::parse_policy_list("belady+prefetch"),
                       "--policies: belady takes no +prefetch (it knows the future)", std::invalid_argument);
  CHECK_THROWS_AS(ablate::parse_policy_list("lru+prefetch:0"), std::invalid_argument);
  CHECK_THROWS_AS(ablate::parse_policy_list("lru+prefetchx"), std::invalid_argument);
  // +split minimises reads unless :misses says otherwise; the label names the miss objective only.
  const auto splits = ablate::parse_policy_list("lfru+split,lfru+split:reads+prefetch:3,lru+split:misses");
  REQUIRE(splits.size() == 3);
  CHECK(splits[0].split_by_trace);
  CHECK(splits[0].split_objective == pager::SplitObjective::Reads);
  CHECK(splits[1].split_objective == pager::SplitObjective::Reads);
  CHECK(splits[1].predict_m == 3);
  CHECK(splits[2].split_objective == pager::SplitObjective::Misses);
  CHECK(ablate::policy_label(splits[0]) == "lfru+split");
  CHECK(ablate::policy_label(splits[1]) == "lfru+prefetch:3+split");
  CHECK(ablate::policy_label(splits[2]) == "lru+split:misses");
  CHECK_THROWS_WITH_AS(ablate::parse_policy_list("lru+split:bytes"),
                       "--policies: expected POLICY+split, POLICY+split:reads or POLICY+split:misses, got "
                       "'lru+split:bytes'",
                       std::invalid_argument);
  CHECK(ablate::parse_layer_range("3") == std::make_pair(3u, 3u));
  CHECK(ablate::parse_layer_range("0-7") == std::make_pair(0u, 7u));
  CHECK_THROWS_AS(ablate::parse_layer_range("5-2"), std::invalid_argument);
}

TEST_CASE("--split-trace splits the slots by another trace's reuse; another geometry is refused") {
  const pager::Trace head = prefix(recorded(), 256), tail = suffix(prefix(recorded(), 1024), 768);
  const auto policies = ablate::parse_policy_list("lru+split");
  SimulateRequest in_sample{{6, 12}, policies, std::nullopt};
  const SimulateReport own = ablate::run_simulation(tail, in_sample);
  SimulateRequest itself = in_sample;
  itself.split_trace = &tail;  // naming the trace itself is the in-sample figure
  const SimulateReport same = ablate::run_simulation(tail, itself);
  SimulateRequest out_of_sample = in_sample;
  out_of_sample.split_trace = &head;
  const SimulateReport other = ablate::run_simulation(tail, out_of_sample);
  const SimulateReport head_own = ablate::run_simulation(head, in_sample);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(same.cells[i].misses == own.cells[i].misses);
    CHECK(same.cells[i].layer_slots == own.cells[i].layer_slots);
    // The split is the head's (the same total slots), replayed on the tail's accesses.
    CHECK(other.cells[i].layer_slots == head_own.cells[i].layer_slots);
    CHECK(other.cells[i].accesses == own.cells[i].accesses);
  }
  CHECK(other.cells[1].layer_slots != own.cells[1].layer_slots);  // 12 slots: the head's reuse is not the tail's
  // Layers kept by --layers keep the split trace's same layers.
  SimulateRequest ranged = out_of_sample;
  ranged.layers = std::make_pair(2u, 5u);
  CHECK(ablate::run_simulation(tail, ranged).rows == own.rows / 2);

  const pager::Trace narrow = random_trace(3, 8, 32, 4, 64);
  out_of_sample.split_trace = &narrow;
  CHECK_THROWS_WITH_AS(
      ablate::run_simulation(tail, out_of_sample),
      ("--split-trace: it has 8 layers x 32 experts, the trace 8 x " + std::to_string(tail.meta.experts)).c_str(),
      std::invalid_argument);
}

TEST_CASE("a missing or corrupt trace is an error naming the file") {
  CHECK_THROWS_WITH_AS(ablate::load_trace("/nonexistent/t.trace"), "trace /nonexistent/t.trace does not exist",
                       std::runtime_error);
  const test::TempDir dir("simulate");
  const std::string bad = dir.write("bad.trace.xz", "not xz data").string();
  std::string message;
  try {
    ablate::load_trace(bad);
  } catch (const std::exception& e) {
    message = e.what();
  }
  CHECK(message.find("cannot decompress trace " + bad) == 0);
}

TEST_CASE("moepage simulate reads a plain text trace and writes JSON equal to the library's numbers") {
  const test::TempDir tmp("simulate-cli");
  const std::string dir = tmp.path().string();
  const pager::Trace slice = prefix(recorded(), 1024);
  const std::string trace = dir + "/slice.trace", json = dir + "/sim.json", out = dir + "/stdout.txt";
  std::ofstream(trace) << trace_text(slice);
  const std::string cmd = test::moepage_exe().string() + " simulate " + trace +
                          " --slots 8,16 --policies lru,belady --layers 4-7 --json " + json + " > " + out;
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string table = test::read_file(out);
  CHECK(table.find("| slots | lru | belady | lru/belady |") != std::string::npos);
  const nlohmann::json doc = nlohmann::json::parse(test::read_file(json));
  const SimulateReport lib =
      ablate::run_simulation(slice, {{8, 16}, ablate::parse_policy_list("lru,belady"), std::make_pair(4u, 7u)});
  REQUIRE(doc["results"].size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(doc["results"][i]["misses"].get<uint64_t>() == lib.cells[i].misses);
    CHECK(doc["results"][i]["slots"].get<uint32_t>() == lib.cells[i].slots);
  }
  CHECK(std::system((test::moepage_exe().string() + " simulate " + trace + " --slots 0 2>/dev/null").c_str()) != 0);

  // --split-trace: the split's trace travels into the JSON; a missing one is an error.
  const std::string split_cmd = test::moepage_exe().string() + " simulate " + trace +
                                " --slots 8 --policies lru+split --split-trace " + trace + " --json " + json + " > " +
                                out;
  REQUIRE(std::system(split_cmd.c_str()) == 0);
  CHECK(nlohmann::json::parse(test::read_file(json))["split_trace"] == trace);
  CHECK(std::system((test::moepage_exe().string() + " simulate " + trace + " --slots 8 --split-trace " + dir +
                     "/none.trace 2>/dev/null")
                        .c_str()) != 0);
  // --json may not overwrite the split trace.
  const std::string split_copy = dir + "/split.trace";
  std::ofstream(split_copy) << trace_text(slice);
  CHECK(std::system((test::moepage_exe().string() + " simulate " + trace + " --slots 8 --split-trace " + split_copy +
                     " --json " + split_copy + " 2>/dev/null")
                        .c_str()) != 0);
  CHECK(test::read_file(split_copy) == trace_text(slice));
}
