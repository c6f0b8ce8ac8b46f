// The simulator's lru against the live lru pager: record a trace with `moepage run --trace` on the
// committed tiny model, replay it with the slot count the pager reported, and require the same
// misses, so a policy measured by `moepage simulate` is the policy a real run gets.
//
// Hash-routed layers (0-2 of this model) are different on purpose: the architecture knows their
// experts from the token ids and hints them, so the live pager prefetches them and the trace marks
// those accesses prefetched. The simulator replays demand paging only, so the equality is required
// on every layer whose accesses were all demand accesses (the score-routed layers).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ablate/trace_input.hpp"
#include "moepage/pager_core/simulator.hpp"

using namespace moepage;

namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("the simulated lru misses equal the live lru pager's on the trace of the same run") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("moepage-live-lru-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const std::string budget : {"1.5MiB", "3MiB"}) {
    INFO("budget " << budget);
    const std::filesystem::path trace_path = dir / "run.trace", stats_path = dir / "stats.json";
    const std::string cmd = std::string(MOEPAGE_BINARY_DIR "/bin/moepage --log-level warn run") +
                            " --profile " MOEPAGE_SOURCE_DIR "/configs/lru.yaml" +
                            " --model " MOEPAGE_SOURCE_DIR "/models/ds4-debian-tiny" +
                            " --plugin-dir " MOEPAGE_PLUGIN_BUILD_DIR + " --set pager.budget=" + budget +
                            " --set pager.policy=lru --prompt-ids 1,20,300,4000,50,600,7000,80 --max-tokens 8" +
                            " --trace " + trace_path.string() + " --stats-json " + stats_path.string() + " > " +
                            (dir / "stdout.txt").string() + " 2> " + (dir / "stderr.txt").string();
    const int rc = std::system(cmd.c_str());
    INFO("stderr: " << read(dir / "stderr.txt"));
    REQUIRE(rc == 0);
    const nlohmann::json stats = nlohmann::json::parse(read(stats_path));
    const uint32_t slots = stats["pager"]["slots_per_layer"].get<uint32_t>();
    const uint64_t live_misses = stats["pager"]["misses"].get<uint64_t>();
    REQUIRE(slots >= 6);
    REQUIRE(slots < 64);

    const pager::Trace trace = ablate::load_trace(trace_path);
    REQUIRE(trace.has_outcomes);
    CHECK(trace.rows.size() == stats["pager"]["accesses"].get<uint64_t>());
    CHECK(pager::recorded_result(trace).misses == live_misses);
    std::vector<uint8_t> prefetched(trace.meta.layers, 0);
    for (const pager::TraceRow& r : trace.rows) prefetched[r.layer] |= r.prefetched;
    const pager::SimResult sim = pager::simulate(trace, slots, {pager::PolicyKind::Lru, 0.0});
    CHECK(sim.accesses == trace.rows.size());
    uint32_t demand_layers = 0;
    uint64_t sim_misses = 0, demand_live_misses = 0;
    for (uint32_t l = 0; l < trace.meta.layers; ++l) {
      if (prefetched[l]) continue;
      INFO("layer " << l);
      ++demand_layers;
      const uint64_t live = stats["layers"][l]["misses"].get<uint64_t>();
      CHECK(sim.layers[l].misses == live);
      CHECK(sim.layers[l].accesses == stats["layers"][l]["accesses"].get<uint64_t>());
      sim_misses += sim.layers[l].misses;
      demand_live_misses += live;
    }
    CHECK(demand_layers == 5);  // ds4-debian-tiny: 8 layers, the first 3 hash-routed
    CHECK(sim_misses == demand_live_misses);
    CHECK(demand_live_misses > 0);
  }
  std::filesystem::remove_all(dir);
}
