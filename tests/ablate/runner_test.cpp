// The runner with a fake executor (no model needed): the schedule is followed, the table files are
// written, ids==arm0 reflects the ids, and the SVG is well-formed.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "ablate/runner.hpp"
#include "ablate/svg_plot.hpp"
#include "support/temp_dir.hpp"
#include "svg_check.hpp"

using namespace moepage::ablate;
using moepage::test::TempDir;

namespace {

Spec two_arm_spec(const TempDir& dir) {
  dir.write("base.yaml", "device: cpu\npager:\n  plugin: resident\ntransport:\n  plugin: pread\n");
  dir.write("model/config.json", "{}");
  return parse_spec(
      "base: base.yaml\nmodel: model\n"
      "arms:\n"
      "  - {name: resident, set: {pager.plugin: resident}}\n"
      "  - {name: lru-8MiB, set: {pager.plugin: lru, pager.budget: 8MiB}}\n"
      "  - {name: lru-16MiB, set: {pager.plugin: lru, pager.budget: 16MiB, pager.note: \"${model}\"}}\n"
      "repetitions: 3\nwarmup_tokens: 2\nprompts: [{ids: [1, 2]}, {ids: [3]}]\nmax_tokens: 5\n",
      dir.path() / "spec.yaml");
}

// A fake `moepage run`: arm lru-16MiB diverges on the second prompt; the rest echo the prompt.
Measurement fake_run(const Invocation& inv, std::vector<std::string>& log) {
  log.push_back(inv.arm + "/" + std::to_string(inv.max_tokens));
  Measurement m;
  m.prompt_tokens = uint32_t(inv.prompt->ids->size());
  m.generated = inv.max_tokens;
  m.ids.assign(inv.max_tokens, inv.prompt->ids->front());
  if (inv.arm == "lru-16MiB" && inv.prompt->ids->front() == 3) m.ids.back() = 99;
  m.prefill_seconds = 0.1;
  m.decode_seconds = inv.arm == "resident" ? 0.4 : 0.8;
  PagerCounters c;
  c.accesses = 100;
  c.hits = inv.arm == "resident" ? 100 : 60;
  c.misses = c.accesses - c.hits;
  c.bytes_read = c.misses * 1000;
  m.pager = c;
  m.peak_rss_bytes = 64u << 20;
  m.load_seconds = 0.5;
  return m;
}

}  // namespace

TEST_CASE("a fake ablation writes all four files with ids==arm0 per arm") {
  TempDir dir("runner");
  const Spec spec = two_arm_spec(dir);
  std::vector<std::string> log;
  RunnerOptions options;
  options.out_dir = dir.path() / "out";
  options.print_table = false;
  options.pager_stats_available = true;
  const AblationResult r = run_ablation(spec, options, [&](const Invocation& inv) { return fake_run(inv, log); });

  // Warm-up once per arm with its token count, then 3 repetitions x 2 prompts x 3 arms.
  REQUIRE(log.size() == 3 + 18);
  CHECK(log[0] == "resident/2");
  CHECK(log[3] == "resident/5");
  CHECK(log[4] == "lru-8MiB/5");

  REQUIRE(r.rows.size() == 3);
  CHECK(r.rows[0].info.pager == "resident");
  CHECK(r.rows[1].info.pager == "lru");
  CHECK(*r.rows[1].info.budget == 8u << 20);
  CHECK(r.rows[1].decode_tok_s.n == 6);
  CHECK(r.rows[1].decode_tok_s.mean == doctest::Approx(4 / 0.8));
  CHECK(r.rows[1].hit_rate.mean == doctest::Approx(0.6));
  CHECK(*r.rows[1].ids_match_arm0);
  CHECK_FALSE(*r.rows[2].ids_match_arm0);

  for (const char* name : {"table.md", "table.csv", "table.json", "plot.svg"}) {
    CHECK(std::filesystem::exists(options.out_dir / name));
  }
  const std::string md = moepage::test::read_file(options.out_dir / "table.md");
  CHECK(md.find("arms reloaded per repetition: yes") != std::string::npos);
  CHECK(md.find("| lru-16MiB | lru | pread | 16MiB |") != std::string::npos);
  CHECK(md.find("FALSE") != std::string::npos);
  const std::string csv = moepage::test::read_file(options.out_dir / "table.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
  CHECK(moepage::test::read_file(options.out_dir / "table.json").find("\"reloaded_per_repetition\": true") !=
        std::string::npos);
  const std::string svg = moepage::test::read_file(options.out_dir / "plot.svg");
  CHECK(moepage::test::svg_is_well_formed(svg) == "");
  CHECK(svg.find(">lru<") != std::string::npos);
  CHECK(svg.find("8.0 MiB") != std::string::npos);
}

TEST_CASE("placeholders in set values are filled in before the profile is loaded") {
  TempDir dir("placeholders");
  const Spec spec = two_arm_spec(dir);
  Placeholders vars{"/m", "/o", "/o/adapter.hfadpt"};
  const auto sets = arm_sets(spec.arms[2], vars);
  REQUIRE(sets.size() == 3);
  CHECK(sets[2] == "pager.note=/m");
}

TEST_CASE("an arm whose overrides break the profile fails before any run, naming spec and arm") {
  TempDir dir("badarm");
  dir.write("base.yaml", "device: cpu\npager:\n  plugin: resident\n");
  dir.write("model/config.json", "{}");
  const Spec spec = parse_spec(
      "base: base.yaml\nmodel: model\narms: [{name: broken, set: {generate.max_tokens: lots}}]\n"
      "prompts: [{ids: [1]}]\n",
      dir.path() / "spec.yaml");
  RunnerOptions options;
  options.out_dir = dir.path() / "out";
  options.print_table = false;
  int calls = 0;
  std::string message;
  try {
    run_ablation(spec, options, [&](const Invocation&) {
      ++calls;
      return Measurement{};
    });
  } catch (const SpecError& e) {
    message = e.what();
  }
  CHECK(calls == 0);
  CHECK(message.find((dir.path() / "spec.yaml").string() + ": arm 'broken': ") == 0);
}

TEST_CASE("a failing run stops the ablation with the executor's message") {
  TempDir dir("failing");
  const Spec spec = two_arm_spec(dir);
  RunnerOptions options;
  options.out_dir = dir.path() / "out";
  options.print_table = false;
  CHECK_THROWS_WITH_AS(run_ablation(spec, options,
                                    [](const Invocation& inv) -> Measurement {
                                      throw std::runtime_error("arm '" + inv.arm + "': boom");
                                    }),
                       "arm 'resident': boom", std::runtime_error);
}

TEST_CASE("the plot of arms without budgets or measurements is still well-formed") {
  ArmRow resident;
  resident.info.name = "resident";
  resident.info.pager = "resident";
  resident.info.series = "resident";
  resident.decode_tok_s = {3, 10.0, 0.5};
  ArmRow unmeasured;
  unmeasured.info.name = "x <&> y";
  unmeasured.info.pager = "a&b";
  unmeasured.info.series = "a&b";
  const std::string svg = ablation_svg({resident, unmeasured}, "title with <markup> & more");
  CHECK(moepage::test::svg_is_well_formed(svg) == "");
  CHECK(svg.find("a&amp;b") != std::string::npos);
  CHECK(svg.find("stroke-dasharray") != std::string::npos);
}

TEST_CASE("ticks are round numbers covering the range") {
  CHECK(nice_ticks(0, 10, 5) == std::vector<double>{0, 2, 4, 6, 8, 10});
  const std::vector<double> small = nice_ticks(0, 0.9, 5);
  REQUIRE(small.size() == 6);
  CHECK(small[1] == doctest::Approx(0.2));
  CHECK(small.back() == doctest::Approx(1.0));  // the axis reaches past the largest value
  CHECK(nice_ticks(0, 37.5, 4).back() == doctest::Approx(40.0));
}
