// What the live-versus-simulated tests share: `moepage run` of the committed tiny model with a
// trace and a stats file, in a temporary folder, its stats parsed.
#pragma once
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace moepage::live_run {

// The committed tiny model: 8 layers, the first 3 of which route by token hash.
constexpr uint32_t kLayers = 8, kHashLayers = 3;

// Runs `moepage run --profile configs/lru.yaml --model models/ds4-debian-tiny ARGS` in `dir`
// (stdout and stderr into files there), requires exit 0 and returns --stats-json's document.
inline nlohmann::json run_tiny(const std::filesystem::path& dir, const std::string& args) {
  const std::filesystem::path stats_path = dir / "stats.json";
  const std::string cmd = test::moepage_exe().string() + " --log-level warn run" + " --profile " +
                          test::source_path("configs/lru.yaml").string() + " --model " +
                          test::source_path("models/ds4-debian-tiny").string() + " --plugin-dir " +
                          test::plugin_dir().string() + " " + args + " --stats-json " + stats_path.string() + " > " +
                          (dir / "stdout.txt").string() + " 2> " + (dir / "stderr.txt").string();
  const int rc = std::system(cmd.c_str());
  INFO("stderr: " << test::read_file(dir / "stderr.txt"));
  REQUIRE(rc == 0);
  return nlohmann::json::parse(test::read_file(stats_path));
}

// run_tiny on a fixed 16-token prompt for 64 tokens. `args` come first: their order matters
// (a --set that picks another pager.plugin drops the pager options set before it).
inline nlohmann::json run_tiny_prompt(const std::filesystem::path& dir, const std::string& args) {
  return run_tiny(dir,
                  args + " --prompt-ids 1,20,300,4000,50,600,7000,80,9,110,1200,13,1400,150,1600,170 --max-tokens 64");
}

// The budget that buys exactly `slots` slots per layer, from a probe run's stats (its pool bytes
// over its slots per layer are the bytes of one slot in every paged layer).
inline std::string budget_buying(const nlohmann::json& probe, uint64_t slots) {
  const uint64_t probe_slots = probe["pager"]["slots_per_layer"].get<uint64_t>();
  REQUIRE(probe_slots > 0);
  return std::to_string(probe["pager"]["pool_bytes"].get<uint64_t>() / probe_slots * slots);
}

}  // namespace moepage::live_run
