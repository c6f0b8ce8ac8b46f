// pager.split = trace against the simulator: a first run under the uniform split records the
// routing; two more runs with the same budget split their slots per layer by that trace's reuse,
// for the fewest misses and for the fewest reads (the default). The simulator, given the splits
// the library computes from the first trace, must miss exactly as the live pager did on every
// layer, and the split pools must cost no more than the uniform ones.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ablate/trace_input.hpp"
#include "live_run.hpp"
#include "moepage/pager_core/simulator.hpp"
#include "moepage/pager_core/split.hpp"
#include "support/temp_dir.hpp"

using namespace moepage;

namespace {

using live_run::kHashLayers;
using live_run::kLayers;
constexpr uint32_t kSplitSlots = 16;

nlohmann::json run_paged(const std::filesystem::path& dir, const std::string& budget, const std::string& extra) {
  return live_run::run_tiny_prompt(dir, " --set pager.plugin=paged --set pager.budget=" + budget + extra);
}

}  // namespace

TEST_CASE("the live split pager misses as the simulator says, on every layer, within the same budget") {
  const moepage::test::TempDir tmp("live-split");
  const std::filesystem::path& dir = tmp.path();
  // The budget that buys exactly kSplitSlots slots: a probe run reports the bytes of one slot.
  const std::string budget = live_run::budget_buying(run_paged(dir, "1.5MiB", ""), kSplitSlots);

  const std::filesystem::path uniform_path = dir / "uniform.trace", split_path = dir / "split.trace";
  const nlohmann::json uniform = run_paged(dir, budget, " --trace " + uniform_path.string());
  REQUIRE(uniform["pager"]["slots_per_layer"].get<uint32_t>() == kSplitSlots);
  const nlohmann::json split = run_paged(
      dir, budget,
      " --set pager.split=trace --set pager.split_objective=misses --set pager.split_trace=" + uniform_path.string() +
          " --trace " + split_path.string());
  const pager::Trace recorded = ablate::load_trace(uniform_path), replayed = ablate::load_trace(split_path);
  REQUIRE(recorded.meta.layers == kLayers);

  pager::SplitRequest request;
  request.total_slots = uint64_t(kSplitSlots) * kLayers;
  request.min_slots = recorded.meta.top_k;
  request.policy = {pager::PolicyKind::Lfru, 0.0};  // the paged pager's default
  request.objective = pager::SplitObjective::Misses;
  REQUIRE(request.min_slots == 6);
  const pager::SplitPlan plan = pager::split_slots_by_reuse(recorded, request);
  INFO("split " << pager::format_layer_slots(plan.slots));
  CHECK(plan.total_slots == request.total_slots);
  // The hinted (hash-routed) layers barely miss, so they get less than the uniform count; the
  // split really moved slots.
  for (uint32_t l = 0; l < kHashLayers; ++l) CHECK(plan.slots[l] < kSplitSlots);
  CHECK(*std::max_element(plan.slots.begin(), plan.slots.end()) > kSplitSlots);

  // Honest budget: the same bytes as the uniform pools. Stats report the smallest layer's slots,
  // the largest request every layer can serve (the architecture's prefill band).
  const uint32_t band = *std::min_element(plan.slots.begin(), plan.slots.end());
  CHECK(split["pager"]["pool_bytes"].get<uint64_t>() == uniform["pager"]["pool_bytes"].get<uint64_t>());
  CHECK(split["pager"]["slots_per_layer"].get<uint32_t>() == band);

  const pager::SimResult sim = pager::simulate_layers(replayed, plan.slots, {pager::PolicyKind::Lfru, 0.0}, band);
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

  // The default objective: the fewest experts read, prefetches of the hinted layers included.
  // Its own trace: the prefill's bands follow the smallest layer's slots, so the requests differ.
  const std::filesystem::path reads_path = dir / "reads.trace";
  const nlohmann::json by_reads = run_paged(
      dir, budget,
      " --set pager.split=trace --set pager.split_trace=" + uniform_path.string() + " --trace " + reads_path.string());
  const pager::Trace reads_replayed = ablate::load_trace(reads_path);
  request.objective = pager::SplitObjective::Reads;
  const pager::SplitPlan reads_plan = pager::split_slots_by_reuse(recorded, request);
  INFO("reads split " << pager::format_layer_slots(reads_plan.slots));
  const uint32_t reads_band = *std::min_element(reads_plan.slots.begin(), reads_plan.slots.end());
  const pager::SimResult reads_sim =
      pager::simulate_layers(reads_replayed, reads_plan.slots, {pager::PolicyKind::Lfru, 0.0}, reads_band);
  for (uint32_t l = 0; l < kLayers; ++l) {
    INFO("layer " << l);
    CHECK(reads_sim.layers[l].misses == by_reads["layers"][l]["misses"].get<uint64_t>());
  }
  CHECK(by_reads["pager"]["pool_bytes"].get<uint64_t>() == uniform["pager"]["pool_bytes"].get<uint64_t>());
  CHECK(reads_sim.misses == by_reads["pager"]["misses"].get<uint64_t>());
  // It reads no more than the miss split, in the simulator and live alike.
  CHECK(reads_sim.misses + reads_sim.prefetch_reads <= sim.misses + sim.prefetch_reads);
  CHECK(by_reads["pager"]["bytes_read"].get<uint64_t>() <= split["pager"]["bytes_read"].get<uint64_t>());
}
