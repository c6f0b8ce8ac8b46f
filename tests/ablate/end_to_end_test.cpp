// `moepage ablate` for real: a synthesized tiny model, resident against a thrashing LRU pool, alone
// and as two expert-parallel ranks (an arm override parallel.ranks: 2), run through the built
// `moepage` binary and plugins. Neither paging nor the ranks may change a single token.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"
#include "svg_check.hpp"

TEST_CASE("a tiny ablation of resident against lru runs end to end with identical ids") {
  moepage::test::TempDir dir("ablate-e2e");
  dir.write("spec.yaml", "base: " + moepage::test::source_path("configs/default.yaml").string() +
                             "\n"
                             "model: {synth: {preset: tiny, seed: 2}}\n"
                             "arms:\n"
                             "  - {name: resident, set: {pager.plugin: resident}}\n"
                             "  - {name: lru-min, set: {pager.plugin: lru, pager.budget: 1MiB}}\n"
                             "  - {name: lru-2-ranks, set: {pager.plugin: lru, pager.budget: 1MiB, parallel.ranks: 2}}\n"
                             "repetitions: 2\n"
                             "prompts: [{ids: [1, 2, 3, 4]}]\n"
                             "max_tokens: 6\n");
  const std::filesystem::path out = dir.path() / "out";
  const std::string command = moepage::test::moepage_exe().string() + " ablate " + (dir / "spec.yaml").string() +
                              " --quiet --plugin-dir " + moepage::test::plugin_dir().string() + " --out " +
                              out.string() + " 2>" + (dir / "stderr.txt").string();
  const int rc = std::system(command.c_str());
  INFO("stderr: " << moepage::test::read_file(dir.path() / "stderr.txt"));
  REQUIRE(rc == 0);
  for (const char* name : {"table.md", "table.csv", "table.json", "plot.svg"})
    CHECK(std::filesystem::exists(out / name));
  const nlohmann::json table = nlohmann::json::parse(moepage::test::read_file(out / "table.json"));
  REQUIRE(table["arms"].size() == 3);  // the third: two expert-parallel ranks, 1 MiB each
  CHECK(table["reloaded_per_repetition"] == true);
  for (const auto& arm : table["arms"]) {
    INFO("arm " << arm["name"]);
    CHECK(arm["ids_eq_arm0"] == true);
    CHECK(arm["decode_tok_s"]["n"] == 2);
    CHECK(arm["runs"][0]["ids"].size() == 6);
  }
  if (table["pager_stats_available"] == true) {
    CHECK(table["arms"][0]["hit_rate"]["mean"].get<double>() == doctest::Approx(1.0));
    CHECK(table["arms"][1]["hit_rate"]["mean"].get<double>() < 1.0);
    // Load time is measured by the run itself, not estimated from wall time.
    for (const auto& arm : table["arms"]) {
      INFO("arm " << arm["name"]);
      CHECK(arm["load_seconds_estimated"] == false);
      CHECK(arm["load_seconds"]["n"] == 2);
      CHECK(arm["load_seconds"]["mean"].get<double>() > 0.0);
      CHECK(arm["routed_compute_ms_per_token"]["n"] == 2);
      CHECK(arm["routed_compute_ms_per_token"]["mean"].get<double>() > 0.0);
    }
  }
  CHECK(moepage::test::svg_is_well_formed(moepage::test::read_file(out / "plot.svg")) == "");
  CHECK(moepage::test::read_file(out / "table.md").find("| lru-min | lru | pread | 1MiB |") != std::string::npos);
  CHECK(moepage::test::read_file(out / "table.md").find("| lru-2-ranks | lru x2 ranks | pread | 1MiB per rank x2 |") !=
        std::string::npos);
}
