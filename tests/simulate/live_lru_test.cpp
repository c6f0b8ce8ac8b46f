// The simulator's lru against the live lru pager: record a trace with `moepage run --trace` on the
// committed tiny model, replay it with the slot count the pager reported, and require the same
// misses on every layer, so a policy measured by `moepage simulate` is the policy a real run gets.
//
// ds4-debian-tiny has 8 layers; the first 3 are hash-routed: the architecture knows their experts
// from the token ids and hints them before each step, so the live pager prefetches them. The trace
// records those hint calls (v2 hint rows) and the simulator replays them, so the equality holds on
// the hinted layers too. The run is long enough (80 tokens, 16 slots of 64) that every layer evicts.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ablate/trace_input.hpp"
#include "moepage/pager_core/simulator.hpp"
#include "moepage/pager_core/split.hpp"

using namespace moepage;

namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr uint32_t kLayers = 8, kHashLayers = 3, kSlots = 16;

// `moepage run` of the tiny model under the lru pager; returns the stats JSON.
nlohmann::json run_lru(const std::filesystem::path& dir, const std::string& budget, const std::string& trace_path,
                       const std::string& extra_options = "") {
  const std::filesystem::path stats_path = dir / "stats.json";
  const std::string cmd = std::string(MOEPAGE_BINARY_DIR "/bin/moepage --log-level warn run") +
                          " --profile " MOEPAGE_SOURCE_DIR "/configs/lru.yaml" +
                          " --model " MOEPAGE_SOURCE_DIR "/models/ds4-debian-tiny" +
                          " --plugin-dir " MOEPAGE_PLUGIN_BUILD_DIR + " --set pager.budget=" + budget +
                          " --set pager.policy=lru" + extra_options +
                          " --prompt-ids 1,20,300,4000,50,600,7000,80,9,110,1200,13,1400,150,1600,170" +
                          " --max-tokens 64" + (trace_path.empty() ? "" : " --trace " + trace_path) +
                          " --stats-json " + stats_path.string() + " > " + (dir / "stdout.txt").string() + " 2> " +
                          (dir / "stderr.txt").string();
  const int rc = std::system(cmd.c_str());
  INFO("stderr: " << read(dir / "stderr.txt"));
  REQUIRE(rc == 0);
  return nlohmann::json::parse(read(stats_path));
}

// The budget that buys exactly `slots` slots per layer: a probe run reports the bytes of one slot.
std::string budget_for_slots(const std::filesystem::path& dir, uint64_t slots) {
  const nlohmann::json probe = run_lru(dir, "1.5MiB", "");
  const uint64_t probe_slots = probe["pager"]["slots_per_layer"].get<uint64_t>();
  REQUIRE(probe_slots > 0);
  const uint64_t slot_bytes_all_layers = probe["pager"]["pool_bytes"].get<uint64_t>() / probe_slots;
  return std::to_string(slot_bytes_all_layers * slots);
}

}  // namespace

TEST_CASE("the simulated lru misses equal the live lru pager's on every layer of the same run, hinted ones too") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("moepage-live-lru-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string budget = budget_for_slots(dir, kSlots);

  const std::filesystem::path trace_path = dir / "run.trace";
  const nlohmann::json stats = run_lru(dir, budget, trace_path.string());
  REQUIRE(stats["pager"]["slots_per_layer"].get<uint32_t>() == kSlots);
  CHECK(stats["run"]["load_seconds"].get<double>() > 0.0);
  // The CPU architecture times its routed experts (ABI 1.1 arch stats).
  REQUIRE(stats["run"].contains("routed_compute_seconds"));
  CHECK(stats["run"]["routed_compute_seconds"].get<double>() > 0.0);
  CHECK(stats["run"]["routed_compute_seconds"].get<double>() <
        stats["run"]["prefill_seconds"].get<double>() + stats["run"]["decode_seconds"].get<double>());

  const pager::Trace trace = ablate::load_trace(trace_path);
  REQUIRE(trace.meta.layers == kLayers);
  REQUIRE(trace.has_outcomes);
  CHECK(trace.rows.size() == stats["pager"]["accesses"].get<uint64_t>());
  CHECK(pager::recorded_result(trace).misses == stats["pager"]["misses"].get<uint64_t>());
  CHECK(trace.rows.back().token >= 64);

  // The hash-routed layers were hinted and the live pager used the prefetches; the others were not.
  std::vector<uint64_t> hints(kLayers, 0), prefetched(kLayers, 0);
  for (const pager::TraceHint& h : trace.hints) ++hints[h.layer];
  for (const pager::TraceRow& r : trace.rows) prefetched[r.layer] += r.prefetched;
  for (uint32_t l = 0; l < kLayers; ++l) {
    INFO("layer " << l);
    CHECK((hints[l] > 0) == (l < kHashLayers));
    CHECK((prefetched[l] > 0) == (l < kHashLayers));
  }

  const pager::SimResult sim = pager::simulate(trace, kSlots, {pager::PolicyKind::Lru, 0.0});
  CHECK(sim.accesses == trace.rows.size());
  for (uint32_t l = 0; l < kLayers; ++l) {
    INFO("layer " << l);
    const uint64_t live = stats["layers"][l]["misses"].get<uint64_t>();
    CHECK(sim.layers[l].accesses == stats["layers"][l]["accesses"].get<uint64_t>());
    CHECK(sim.layers[l].misses == live);
    CHECK(live > uint64_t(kSlots));  // more misses than slots: the layer evicted
  }
  CHECK(sim.misses == stats["pager"]["misses"].get<uint64_t>());

  // Belady, taking the hints as free loads, is the floor of every policy on this trace.
  for (uint32_t slots : {6u, kSlots, 32u}) {
    const pager::SimResult belady = pager::simulate(trace, slots, {pager::PolicyKind::Belady, 0.0});
    for (pager::PolicyKind kind : {pager::PolicyKind::Lru, pager::PolicyKind::Lfu, pager::PolicyKind::Lfru}) {
      const pager::SimResult other = pager::simulate(trace, slots, {kind, 0.0});
      INFO(pager::policy_name(kind) << " at " << slots << " slots");
      for (uint32_t l = 0; l < kLayers; ++l) CHECK(belady.layers[l].misses <= other.layers[l].misses);
      CHECK(belady.misses < other.misses);
    }
  }
  std::filesystem::remove_all(dir);
}

// pager.split = trace against the simulator: a first run under the uniform split records the
// routing; a second run with the same budget splits its slots per layer by that trace's reuse. The
// simulator, given the split the library computes from the first trace, must miss exactly as the
// live pager did on every layer, and the split pools must cost no more than the uniform ones.
TEST_CASE("the live split pager misses as the simulator says, on every layer, within the same budget") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("moepage-live-split-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string budget = budget_for_slots(dir, kSlots);
  const std::filesystem::path uniform_path = dir / "uniform.trace", split_path = dir / "split.trace";
  const nlohmann::json uniform = run_lru(dir, budget, uniform_path.string());
  const nlohmann::json split = run_lru(dir, budget, split_path.string(),
                                       " --set pager.split=trace --set pager.split_trace=" + uniform_path.string());
  const pager::Trace recorded = ablate::load_trace(uniform_path), replayed = ablate::load_trace(split_path);

  pager::SplitRequest request;
  request.total_slots = uint64_t(kSlots) * kLayers;
  request.min_slots = recorded.meta.top_k;
  request.policy = {pager::PolicyKind::Lru, 0.0};
  REQUIRE(request.min_slots == 6);
  const pager::SplitPlan plan = pager::split_slots_by_reuse(recorded, request);
  INFO("split " << pager::format_layer_slots(plan.slots));
  CHECK(plan.total_slots == request.total_slots);
  // The hinted (hash-routed) layers barely miss, so they get less than the uniform count; the split
  // really moved slots.
  for (uint32_t l = 0; l < kHashLayers; ++l) CHECK(plan.slots[l] < kSlots);
  CHECK(*std::max_element(plan.slots.begin(), plan.slots.end()) > kSlots);

  // Honest budget: the same bytes as the uniform pools. Stats report the smallest layer's slots,
  // the largest request every layer can serve (the architecture's prefill band).
  CHECK(split["pager"]["pool_bytes"].get<uint64_t>() == uniform["pager"]["pool_bytes"].get<uint64_t>());
  CHECK(split["pager"]["slots_per_layer"].get<uint32_t>() == *std::min_element(plan.slots.begin(), plan.slots.end()));

  const uint32_t band = *std::min_element(plan.slots.begin(), plan.slots.end());
  const pager::SimResult sim = pager::simulate_layers(replayed, plan.slots, {pager::PolicyKind::Lru, 0.0}, band);
  CHECK(sim.accesses == replayed.rows.size());
  for (uint32_t l = 0; l < kLayers; ++l) {
    INFO("layer " << l);
    CHECK(sim.layers[l].misses == split["layers"][l]["misses"].get<uint64_t>());
  }
  CHECK(sim.misses == split["pager"]["misses"].get<uint64_t>());
  // Greedy ids do not depend on the pager, so both runs routed alike; on its own routing the split
  // misses less than the uniform pools.
  CHECK(replayed.rows.size() == recorded.rows.size());
  CHECK(split["pager"]["misses"].get<uint64_t>() < uniform["pager"]["misses"].get<uint64_t>());
  std::filesystem::remove_all(dir);
}
