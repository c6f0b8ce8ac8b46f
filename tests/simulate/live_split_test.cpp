// pager.split = trace against the simulator: a first run under the uniform split records the
// routing; a second run with the same budget splits its slots per layer by that trace's reuse. The
// simulator, given the split the library computes from the first trace, must miss exactly as the
// live pager did on every layer, and the split pools must cost no more than the uniform ones.
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
      " --set pager.split=trace --set pager.split_trace=" + uniform_path.string() + " --trace " + split_path.string());
  const pager::Trace recorded = ablate::load_trace(uniform_path), replayed = ablate::load_trace(split_path);
  REQUIRE(recorded.meta.layers == kLayers);

  pager::SplitRequest request;
  request.total_slots = uint64_t(kSplitSlots) * kLayers;
  request.min_slots = recorded.meta.top_k;
  request.policy = {pager::PolicyKind::Lfru, 0.0};  // the paged pager's default
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
}
