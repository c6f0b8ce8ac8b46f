#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "profile/profile.hpp"
#include "support/temp_dir.hpp"

using moepage::profile::load_profile;
using moepage::profile::Profile;
using moepage::profile::ProfileError;
using moepage::test::TempDir;

namespace {

// The message load_profile throws, or "" when it loads.
std::string load_error(const std::filesystem::path& file, std::vector<std::string> overrides = {}) {
  try {
    load_profile(file, overrides);
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

// The profile that child.yaml ("base: base.yaml" then `child`) loads to over base.yaml (`base`).
Profile load_over_base(const std::string& base, const std::string& child) {
  TempDir dir;
  dir.write("base.yaml", base);
  return load_profile(dir.write("child.yaml", "base: base.yaml\n" + child));
}

const std::string* option_text(const moepage::profile::ComponentSpec& spec, const std::string& name) {
  for (const auto& option : spec.options) {
    if (option.name == name) return &option.text;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a complete profile loads every setting") {
  TempDir dir;
  auto file = dir.write("p.yaml",
                        "model: models/tiny\n"
                        "device: cpu\n"
                        "arch: deepseek4\n"
                        "pager: {plugin: lru, budget: 8GiB, policy: lfu}\n"
                        "transport:\n  plugin: pread\n  threads: 2\n"
                        "generate: {prompt_ids: [1, 2, 3], max_tokens: 5, temperature: 0.7, top_k: 40, top_p: 0.9, "
                        "seed: 7, warmup_prefills: 2}\n"
                        "log: {level: debug}\n");
  Profile p = load_profile(file);
  CHECK(p.model == dir.path() / "models/tiny");
  CHECK(p.device == "cpu");
  CHECK(p.arch == "deepseek4");
  CHECK(p.pager.plugin == "lru");
  REQUIRE(option_text(p.pager, "budget") != nullptr);
  CHECK(*option_text(p.pager, "budget") == "8GiB");
  CHECK(*option_text(p.pager, "policy") == "lfu");
  CHECK(p.transport.plugin == "pread");
  CHECK(*option_text(p.transport, "threads") == "2");
  CHECK(p.generate.prompt_ids == std::vector<int32_t>{1, 2, 3});
  CHECK(p.generate.max_tokens == 5);
  CHECK(p.generate.temperature == doctest::Approx(0.7));
  CHECK(p.generate.top_k == 40);
  CHECK(p.generate.top_p == doctest::Approx(0.9));
  CHECK(p.generate.seed == 7);
  CHECK(p.generate.warmup_prefills == 2);
  CHECK(p.log_level == "debug");
}

TEST_CASE("settings a profile leaves out take their defaults") {
  TempDir dir;
  Profile p = load_profile(dir.write("p.yaml", "pager: {plugin: resident}\n"));
  CHECK(p.device == "cpu");
  CHECK(p.arch.empty());
  CHECK(p.model.empty());
  CHECK(p.generate.max_tokens == 16);
  CHECK(p.generate.temperature == 0.0);
  CHECK(p.generate.warmup_prefills == 0);
  CHECK(p.log_level == "info");
}

TEST_CASE("malformed YAML gives an error with file, line and column") {
  TempDir dir;
  auto file = dir.write("broken.yaml", "pager:\n  plugin: lru\n  budget: [8GiB\n");
  const std::string message = load_error(file);
  CHECK(message.find(file.string() + ":") != std::string::npos);
  CHECK(message.find("YAML syntax error") != std::string::npos);
  // yaml-cpp reports the end of the unterminated flow sequence; what matters is a real line:column.
  CHECK(message.find(file.string() + ":0:") == std::string::npos);
  CHECK(message.find(":4:1:") != std::string::npos);
}

TEST_CASE("an unknown, wrongly typed or repeated key is an error naming its position, the key and what is valid") {
  // A profile, and parts of its error message.
  const struct {
    const char* yaml;
    std::vector<std::string> parts;
  } cases[] = {
      {"model: m\npagr: {plugin: lru}\n", {"p.yaml:2:1:", "unknown key 'pagr'", "pager"}},
      {"generate:\n  max_token: 3\n", {"p.yaml:2:3:", "unknown key 'generate.max_token'", "max_tokens"}},
      {"generate:\n  max_tokens: lots\n", {"p.yaml:2:15:", "generate.max_tokens: expected an integer", "got 'lots'"}},
      {"generate:\n  warmup_prefills: 101\n", {"p.yaml:2:20:", "generate.warmup_prefills", "0 to 100", "got '101'"}},
      {"device: gpu\n", {"device: expected one of cpu|hip, got 'gpu'"}},
      {"pager: lru\n", {"pager: expected a map of keys"}},
      {"pager: {plugin: lru, budget: {a: 1}}\n", {"pager.budget: expected a single value"}},
      {"generate: {prompt_ids: [1, x]}\n", {"generate.prompt_ids"}},
      {"pager:\n  plugin: lru\n  plugin: resident\n", {"p.yaml:3:3: duplicate key 'pager.plugin'"}},
  };
  TempDir dir;
  for (const auto& c : cases) {
    CAPTURE(c.yaml);
    const std::string message = load_error(dir.write("p.yaml", c.yaml));
    for (const std::string& part : c.parts) CHECK_MESSAGE(message.find(part) != std::string::npos, part);
  }
}

TEST_CASE("a base chain merges key by key with relative paths resolved against each file") {
  TempDir dir;
  dir.write("common/root.yaml",
            "model: ../models/tiny\n"
            "pager: {plugin: lru, budget: 1GiB, policy: lru}\n"
            "transport: {plugin: pread, threads: 8}\n"
            "generate: {prompt: hello, max_tokens: 4}\n");
  dir.write("common/middle.yaml", "base: root.yaml\npager: {budget: 2GiB}\n");
  auto leaf = dir.write("arms/leaf.yaml", "base: ../common/middle.yaml\ntransport: {chunk: 1MiB}\n");
  Profile p = load_profile(leaf);
  CHECK(p.model == dir.path() / "models/tiny");  // relative to root.yaml, not leaf.yaml
  CHECK(p.pager.plugin == "lru");
  CHECK(*option_text(p.pager, "budget") == "2GiB");  // middle wins over root
  CHECK(*option_text(p.pager, "policy") == "lru");   // kept from root
  CHECK(*option_text(p.transport, "threads") == "8");
  CHECK(*option_text(p.transport, "chunk") == "1MiB");
  REQUIRE(p.generate.prompt.has_value());
  CHECK(*p.generate.prompt == "hello");
  CHECK(p.generate.max_tokens == 4);
  // PATH options remember the folder of the file that set them.
  for (const auto& option : p.pager.options) CHECK(option.base_dir == dir.path() / "common");
  for (const auto& option : p.transport.options) {
    CHECK(option.base_dir == (option.name == "chunk" ? dir.path() / "arms" : dir.path() / "common"));
  }
}

TEST_CASE("a child that picks another plugin drops the options inherited for the old one") {
  Profile p = load_over_base("pager: {plugin: lru, budget: 1GiB}\n", "pager: {plugin: resident}\n");
  CHECK(p.pager.plugin == "resident");
  CHECK(p.pager.options.empty());
}

TEST_CASE("options a base sets before any plugin is named survive the child naming one") {
  Profile p = load_over_base("transport: {threads: 2}\n", "transport: {plugin: pread}\n");
  CHECK(p.transport.plugin == "pread");
  REQUIRE(option_text(p.transport, "threads") != nullptr);
  CHECK(*option_text(p.transport, "threads") == "2");
}

TEST_CASE("a key with no value removes what the base set") {
  Profile p = load_over_base("arch: deepseek4\npager: {plugin: lru, budget: 1GiB}\n", "arch:\npager: {budget: ~}\n");
  CHECK(p.arch.empty());
  CHECK(p.pager.plugin == "lru");
  CHECK(p.pager.options.empty());
}

TEST_CASE("a prompt in the child replaces prompt ids from the base") {
  Profile p = load_over_base("generate: {prompt_ids: [5, 6]}\n", "generate: {prompt: hi}\n");
  CHECK(p.generate.prompt == std::optional<std::string>("hi"));
  CHECK_FALSE(p.generate.prompt_ids.has_value());
  TempDir dir;
  CHECK(load_error(dir.write("both.yaml", "generate: {prompt: a, prompt_ids: [1]}\n"))
            .find("set either generate.prompt or generate.prompt_ids, not both") != std::string::npos);
}

TEST_CASE("an inheritance cycle is an error naming the files in order") {
  TempDir dir;
  auto a = dir.write("a.yaml", "base: b.yaml\n");
  auto b = dir.write("b.yaml", "base: a.yaml\n");
  const std::string message = load_error(a);
  CHECK(message.find("profile inheritance cycle") != std::string::npos);
  CHECK(message.find(a.string() + " -> " + b.string() + " -> " + a.string()) != std::string::npos);
}

TEST_CASE("a missing base or profile file is named in the error") {
  TempDir dir;
  auto child = dir.write("child.yaml", "base: nowhere.yaml\n");
  const std::string message = load_error(child);
  CHECK(message.find(child.string() + ":1:7: base profile 'nowhere.yaml' not found") != std::string::npos);
  CHECK(load_error(dir.path() / "absent.yaml")
            .find("cannot read profile '" + (dir.path() / "absent.yaml").string() + "': no such file") !=
        std::string::npos);
}

TEST_CASE("--set overrides take precedence over the file and its base") {
  TempDir dir;
  dir.write("base.yaml", "pager: {plugin: lru, budget: 1GiB}\ngenerate: {max_tokens: 4}\n");
  auto child = dir.write("child.yaml", "base: base.yaml\npager: {budget: 2GiB}\n");
  Profile p = load_profile(child,
                           std::vector<std::string>{"pager.budget=3GiB", "generate.max_tokens=9", "model=here/model",
                                                    "generate.prompt_ids=[4, 5]"},
                           "/work/somewhere");
  CHECK(*option_text(p.pager, "budget") == "3GiB");
  CHECK(p.generate.max_tokens == 9);
  CHECK(p.model == "/work/somewhere/here/model");  // --set paths resolve against the working folder
  CHECK(p.generate.prompt_ids == std::vector<int32_t>{4, 5});
  // Later overrides win over earlier ones.
  Profile q = load_profile(child, std::vector<std::string>{"pager.budget=3GiB", "pager.budget=auto"});
  CHECK(*option_text(q.pager, "budget") == "auto");
}

TEST_CASE("an empty --set value removes the key") {
  TempDir dir;
  auto file = dir.write("p.yaml", "arch: deepseek4\npager: {plugin: lru, budget: 1GiB}\n");
  Profile p = load_profile(file, std::vector<std::string>{"arch=", "pager.budget="});
  CHECK(p.arch.empty());
  CHECK(p.pager.options.empty());
}

TEST_CASE("a bad --set names the override and what was wrong") {
  TempDir dir;
  auto file = dir.write("p.yaml", "pager: {plugin: lru}\n");
  CHECK(load_error(file, {"pager.budget"}).find("--set pager.budget: expected key.path=value") != std::string::npos);
  CHECK(load_error(file, {"pagr.budget=1"}).find("--set pagr.budget=1: unknown key 'pagr'") != std::string::npos);
  CHECK(load_error(file, {"generate.max_tokens=x"})
            .find("--set generate.max_tokens=x: generate.max_tokens: "
                  "expected an integer") != std::string::npos);
  CHECK(load_error(file, {"pager=lru"}).find("'pager' is a section") != std::string::npos);
  CHECK(load_error(file, {"pager.budget={a: 1}"}).find("expected a single value") != std::string::npos);
  CHECK(load_error(file, {"base=x.yaml"}).find("base can only be set inside a profile file") != std::string::npos);
}

TEST_CASE("arch takes a name or a map with the architecture's options, and --set reaches them") {
  TempDir dir;
  auto file = dir.write("p.yaml", "arch: {plugin: deepseek4, threads: 2, max_context: 16384}\n");
  Profile p = load_profile(file, std::vector<std::string>{"arch.threads=3"});
  CHECK(p.arch == "deepseek4");
  REQUIRE(option_text(p.arch_spec, "threads") != nullptr);
  CHECK(*option_text(p.arch_spec, "threads") == "3");
  CHECK(*option_text(p.arch_spec, "max_context") == "16384");
  // Options without a name: the probe picks the architecture, the options still apply.
  p = load_profile(dir.write("q.yaml", "arch: {max_context: 8192}\n"));
  CHECK(p.arch.empty());
  CHECK(*option_text(p.arch_spec, "max_context") == "8192");
  p = load_profile(file, std::vector<std::string>{"arch=other"});
  CHECK(p.arch == "other");
  CHECK(p.arch_spec.options.empty());  // another plugin: the options given for deepseek4 are dropped
}

TEST_CASE("a profile given as text loads as the file it names would, bases read from disk") {
  TempDir dir;
  dir.write("common/root.yaml", "model: ../models/tiny\npager: {plugin: lru, budget: 1GiB}\n");
  const auto as_path = dir.path() / "common/leaf.yaml";  // never written: only its folder anchors paths
  const std::string text = "base: root.yaml\ntransport: {plugin: pread}\npager: {budget: 2GiB}\n";
  Profile p = moepage::profile::load_profile_text(text, as_path);
  CHECK(p.model == dir.path() / "models/tiny");
  CHECK(*option_text(p.pager, "budget") == "2GiB");
  CHECK(p.transport.plugin == "pread");
  CHECK(p.source == as_path);
  // Errors name the path the text stands for, with line and column.
  try {
    moepage::profile::load_profile_text("pager: [1, 2\n", as_path);
    FAIL("malformed text loaded");
  } catch (const ProfileError& e) {
    CHECK(std::string(e.what()).find(as_path.string() + ":") == 0);
    CHECK(std::string(e.what()).find("YAML syntax error") != std::string::npos);
  }
}
