// The ablation spec: what parses, and that every mistake names the spec file and the key.
#include <doctest/doctest.h>

#include <string>

#include "ablate/spec.hpp"
#include "support/temp_dir.hpp"

using moepage::ablate::parse_spec;
using moepage::ablate::RunOrder;
using moepage::ablate::Spec;
using moepage::ablate::SpecError;
using moepage::test::TempDir;

namespace {

// A folder with a base profile and a model folder, so specs can point at real files.
struct SpecDir {
  TempDir dir{"spec"};
  SpecDir() {
    dir.write("base.yaml", "device: cpu\npager:\n  plugin: resident\n");
    dir.write("other.yaml", "base: base.yaml\npager:\n  plugin: lru\n  budget: 8MiB\n");
    dir.write("model/config.json", "{}");
    dir.write("prompt.ids", "5, 6\n7 8\n");
  }
  std::filesystem::path spec_path() const { return dir.path() / "spec.yaml"; }
  Spec parse(const std::string& text) const { return parse_spec(text, spec_path()); }
  std::string error(const std::string& text) const {
    try {
      parse(text);
    } catch (const SpecError& e) {
      return e.what();
    }
    return "(no error)";
  }
};

const std::string kGood =
    "base: base.yaml\n"
    "model: model\n"
    "arms:\n"
    "  - {name: resident, set: {pager.plugin: resident}}\n"
    "  - {name: lru, set: {pager.plugin: lru, pager.budget: 8MiB}}\n"
    "  - {name: other, profile: other.yaml}\n"
    "repetitions: 2\n"
    "warmup_tokens: 3\n"
    "prompts: [{ids: [1, 2, 3]}, {ids_file: prompt.ids}, {text: Hello}]\n"
    "max_tokens: 9\n"
    "order: shuffled\n"
    "seed: 5\n";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a complete spec parses with paths resolved against the spec's folder") {
  SpecDir d;
  const Spec s = d.parse(kGood);
  CHECK(s.base == std::filesystem::weakly_canonical(d.dir.path() / "base.yaml"));
  CHECK(s.model.path == std::filesystem::weakly_canonical(d.dir.path() / "model"));
  CHECK_FALSE(s.model.synth);
  REQUIRE(s.arms.size() == 3);
  CHECK(s.arms[0].profile == s.base);
  CHECK(s.arms[1].sets ==
        std::vector<std::pair<std::string, std::string>>{{"pager.plugin", "lru"}, {"pager.budget", "8MiB"}});
  CHECK(s.arms[2].profile == std::filesystem::weakly_canonical(d.dir.path() / "other.yaml"));
  CHECK(s.repetitions == 2);
  CHECK(s.warmup_tokens == 3);
  CHECK(s.max_tokens == 9);
  CHECK(s.order == RunOrder::Shuffled);
  CHECK(s.seed == 5);
  REQUIRE(s.prompts.size() == 3);
  CHECK(*s.prompts[0].ids == std::vector<int32_t>{1, 2, 3});
  CHECK(*s.prompts[1].ids == std::vector<int32_t>{5, 6, 7, 8});
  CHECK(*s.prompts[2].text == "Hello");
}

TEST_CASE("a synthesized model and a random adapter parse from their maps") {
  SpecDir d;
  const Spec s = d.parse(replace(kGood, "model: model\n",
                                 "model: {synth: {preset: tiny, seed: 3, experts: 16, layers: 4, expert_dtype: fp8}}\n"
                                 "random_adapter: {rank: 8, seed: 2}\n"));
  REQUIRE(s.model.synth);
  CHECK(s.model.synth->preset == "tiny");
  CHECK(s.model.synth->seed == 3);
  CHECK(*s.model.synth->experts == 16);
  CHECK(*s.model.synth->layers == 4);
  CHECK(*s.model.synth->expert_dtype == "fp8");
  REQUIRE(s.random_adapter);
  CHECK(s.random_adapter->rank == 8);
}

TEST_CASE("errors name the spec file, the line and the key") {
  SpecDir d;
  const std::string file = d.spec_path().string();
  SUBCASE("an unknown top-level key") {
    const std::string e = d.error(kGood + "repetitons: 3\n");
    CHECK(e.find(file + ":13: repetitons: unknown key") == 0);
  }
  SUBCASE("a missing base profile file") {
    const std::string e = d.error(replace(kGood, "base: base.yaml", "base: nope.yaml"));
    CHECK(e.find(file + ":1: base: file ") == 0);
    CHECK(e.find("nope.yaml does not exist") != std::string::npos);
  }
  SUBCASE("a model folder that does not exist") {
    CHECK(d.error(replace(kGood, "model: model", "model: gone")).find(file + ":2: model: folder ") == 0);
  }
  SUBCASE("an unknown synth preset") {
    CHECK(d.error(replace(kGood, "model: model", "model: {synth: {preset: huge}}"))
              .find("model.synth.preset: expected tiny, small or flash, got 'huge'") != std::string::npos);
  }
  SUBCASE("an arm without a name") {
    CHECK(d.error(replace(kGood, "{name: lru, set:", "{set:")).find("arms[1].name: missing") != std::string::npos);
  }
  SUBCASE("two arms with one name") {
    CHECK(d.error(replace(kGood, "{name: lru,", "{name: resident,"))
              .find("arms[1].name: duplicate arm name 'resident'") != std::string::npos);
  }
  SUBCASE("an arm with neither set nor profile") {
    CHECK(
        d.error(replace(kGood, "{name: other, profile: other.yaml}", "{name: other}")).find("arms[2]: expected set") !=
        std::string::npos);
  }
  SUBCASE("a set value that is a list") {
    CHECK(d.error(replace(kGood, "pager.budget: 8MiB", "pager.budget: [1, 2]"))
              .find("arms[1].set.pager.budget: expected a scalar value") != std::string::npos);
  }
  SUBCASE("zero repetitions") {
    CHECK(d.error(replace(kGood, "repetitions: 2", "repetitions: 0"))
              .find(file + ":7: repetitions: expected at least 1") == 0);
  }
  SUBCASE("a negative max_tokens") {
    CHECK(d.error(replace(kGood, "max_tokens: 9", "max_tokens: -4"))
              .find("max_tokens: expected a whole number, got '-4'") != std::string::npos);
  }
  SUBCASE("an unknown order") {
    CHECK(d.error(replace(kGood, "order: shuffled", "order: random")).find("order: expected interleaved or shuffled") !=
          std::string::npos);
  }
  SUBCASE("a prompt with two forms") {
    CHECK(d.error(replace(kGood, "{ids: [1, 2, 3]}", "{ids: [1], text: x}")).find("prompts[0]: expected exactly one") !=
          std::string::npos);
  }
  SUBCASE("an ids file holding words") {
    d.dir.write("prompt.ids", "1 2 three\n");
    const std::string e = d.error(kGood);
    CHECK(e.find("prompt.ids: expected token ids (whole numbers), got 'three") != std::string::npos);
  }
  SUBCASE("no prompts") {
    CHECK(d.error(replace(kGood, "prompts: [{ids: [1, 2, 3]}, {ids_file: prompt.ids}, {text: Hello}]\n", ""))
              .find("prompts: missing") != std::string::npos);
  }
  SUBCASE("broken YAML") { CHECK(d.error("arms: [\n").find(file + ":") == 0); }
}

TEST_CASE("a spec file that cannot be opened is named in the error") {
  CHECK_THROWS_WITH_AS(moepage::ablate::load_spec("/nonexistent/spec.yaml"),
                       "/nonexistent/spec.yaml: cannot open the ablation spec", SpecError);
}
