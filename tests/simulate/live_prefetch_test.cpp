// The simulator's lru+prefetch against the live adapter-prefetch pager: record a trace with
// `moepage run --trace` on the committed tiny model and its trained predictor
// (models/ds4-debian-tiny/prefetch.hfadpt), replay it with the pager's slot count, and require the
// same misses on every layer. The trace carries the predictor's proposals (v3 predict rows, from
// the pager's ABI 1.3 prediction events), so the simulator prefetches exactly what the live pager
// prefetched; a policy judged by `moepage simulate` on recorded predictions is the live one.
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
#include "support/test_paths.hpp"

using namespace moepage;

namespace {

using live_run::kHashLayers;
using live_run::kLayers;
constexpr uint32_t kTopM = 8;

nlohmann::json run_prefetch(const std::filesystem::path& dir, const std::string& trace_path) {
  return live_run::run_tiny(dir, " --set pager.plugin=adapter-prefetch --set pager.adapter=" +
                                     moepage::test::source_path("models/ds4-debian-tiny/prefetch.hfadpt").string() +
                                     " --set pager.budget=3MiB --set pager.top_m=" + std::to_string(kTopM) +
                                     " --prompt \"The kernel scheduler decides which task runs next on each CPU\"" +
                                     " --max-tokens 64 --trace " + trace_path);
}

}  // namespace

TEST_CASE(
    "the simulated lfru+prefetch misses equal the live adapter-prefetch pager's (its default policy) on every layer") {
  const moepage::test::TempDir tmp("live-prefetch");
  const std::filesystem::path& dir = tmp.path();
  const std::filesystem::path trace_path = dir / "run.trace";
  const nlohmann::json stats = run_prefetch(dir, trace_path.string());
  const uint32_t slots = stats["pager"]["slots_per_layer"].get<uint32_t>();
  REQUIRE(slots == 15);  // 3 MiB of 204 KiB slots: a quarter of the 64 experts

  const pager::Trace trace = ablate::load_trace(trace_path);
  REQUIRE(trace.meta.layers == kLayers);
  REQUIRE(trace.meta.version == 3);
  CHECK(trace.rows.size() == stats["pager"]["accesses"].get<uint64_t>());

  // Predictions arrive for every scored layer (the adapter predicts each from the layer before), and
  // the predictor's counters agree with the rows the trace holds.
  std::vector<uint64_t> predicted(kLayers, 0);
  for (const pager::TraceHint& h : trace.hints)
    if (h.source == pager::HintSource::Predictor) ++predicted[h.layer];
  uint64_t all_predicted = 0;
  for (uint32_t l = 0; l < kLayers; ++l) {
    INFO("layer " << l);
    CHECK((predicted[l] > 0) == (l >= kHashLayers));
    all_predicted += predicted[l];
  }
  CHECK(all_predicted == stats["pager"]["predictions"].get<uint64_t>());

  pager::PolicySpec with_predictions{pager::PolicyKind::Lfru, 0.0};
  with_predictions.prefetch_predictions = true;
  const pager::SimResult sim = pager::simulate(trace, slots, with_predictions);
  const pager::SimResult plain = pager::simulate(trace, slots, {pager::PolicyKind::Lfru, 0.0});
  for (uint32_t l = 0; l < kLayers; ++l) {
    INFO("layer " << l);
    CHECK(sim.layers[l].accesses == stats["layers"][l]["accesses"].get<uint64_t>());
    CHECK(sim.layers[l].misses == stats["layers"][l]["misses"].get<uint64_t>());
  }
  CHECK(sim.misses == stats["pager"]["misses"].get<uint64_t>());
  CHECK(sim.prefetch_reads == stats["pager"]["prefetch_issued"].get<uint64_t>());
  // Ignoring the predict rows is plain lfru, which misses more on this trace: the replay matters.
  CHECK(plain.misses > sim.misses);
  // Truncating each proposal changes what is prefetched, so the count must be honoured.
  pager::PolicySpec fewer = with_predictions;
  fewer.predict_m = 2;
  CHECK(pager::simulate(trace, slots, fewer).prefetch_reads < sim.prefetch_reads);
}
