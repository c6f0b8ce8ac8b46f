// The simulator's lru against the live lru pager: record a trace with `moepage run --trace` on the
// committed tiny model, replay it with the slot count the pager reported, and require the same
// misses on every layer, so a policy measured by `moepage simulate` is the policy a real run gets.
//
// ds4-debian-tiny has 8 layers; the first 3 are hash-routed: the architecture knows their experts
// from the token ids and hints them before each step, so the live pager prefetches them. The trace
// records those hint calls (v2 hint rows) and the simulator replays them, so the equality holds on
// the hinted layers too. The run is long enough (80 tokens, 16 slots of 64) that every layer evicts.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ablate/trace_input.hpp"
#include "live_run.hpp"
#include "moepage/pager_core/simulator.hpp"
#include "support/temp_dir.hpp"

using namespace moepage;

namespace {

using live_run::kHashLayers;
using live_run::kLayers;
constexpr uint32_t kLruSlots = 16;

// `moepage run` of the tiny model under the lru pager; returns the stats JSON.
nlohmann::json run_lru(const std::filesystem::path& dir, const std::string& budget, const std::string& trace_path) {
  return live_run::run_tiny_prompt(dir, " --set pager.budget=" + budget + " --set pager.policy=lru" +
                                            (trace_path.empty() ? "" : " --trace " + trace_path));
}

}  // namespace

TEST_CASE("the simulated lru misses equal the live lru pager's on every layer of the same run, hinted ones too") {
  const moepage::test::TempDir tmp("live-lru");
  const std::filesystem::path& dir = tmp.path();
  // The budget that buys exactly kLruSlots slots: a probe run reports the bytes of one slot.
  const std::string budget = live_run::budget_buying(run_lru(dir, "1.5MiB", ""), kLruSlots);

  const std::filesystem::path trace_path = dir / "run.trace";
  const nlohmann::json stats = run_lru(dir, budget, trace_path.string());
  REQUIRE(stats["pager"]["slots_per_layer"].get<uint32_t>() == kLruSlots);
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

  const pager::SimResult sim = pager::simulate(trace, kLruSlots, {pager::PolicyKind::Lru, 0.0});
  CHECK(sim.accesses == trace.rows.size());
  for (uint32_t l = 0; l < kLayers; ++l) {
    INFO("layer " << l);
    const uint64_t live = stats["layers"][l]["misses"].get<uint64_t>();
    CHECK(sim.layers[l].accesses == stats["layers"][l]["accesses"].get<uint64_t>());
    CHECK(sim.layers[l].misses == live);
    CHECK(live > uint64_t(kLruSlots));  // more misses than slots: the layer evicted
  }
  CHECK(sim.misses == stats["pager"]["misses"].get<uint64_t>());

  // Belady, taking the hints as free loads, is the floor of every policy on this trace.
  for (uint32_t slots : {6u, kLruSlots, 32u}) {
    const pager::SimResult belady = pager::simulate(trace, slots, {pager::PolicyKind::Belady, 0.0});
    for (pager::PolicyKind kind : {pager::PolicyKind::Lru, pager::PolicyKind::Lfu, pager::PolicyKind::Lfru}) {
      const pager::SimResult other = pager::simulate(trace, slots, {kind, 0.0});
      INFO(pager::policy_name(kind) << " at " << slots << " slots");
      for (uint32_t l = 0; l < kLayers; ++l) CHECK(belady.layers[l].misses <= other.layers[l].misses);
      CHECK(belady.misses < other.misses);
    }
  }
}
