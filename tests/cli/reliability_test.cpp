// What a hostile but realistic user does to `moepage`: full disks, outputs onto inputs, signals
// and file changes mid-run, negative and huge numbers. Each ends in a clear error line (or, for a
// signal, complete outputs and exit 128 + signal), never a signal death or silent loss.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "child_process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

using moepage::test::contains;
using moepage::test::run_moepage;
using moepage::test::RunningMoepage;
using moepage::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string tiny_model() { return moepage::test::source_path("models/ds4-debian-tiny").string(); }
std::string recorded_trace() {
  return moepage::test::source_path("tests/data/ds4-debian-tiny-heldout.trace.xz").string();
}

// A writable copy of the trained tiny model (tests that change its files).
fs::path copy_tiny_model(const TempDir& dir) {
  const fs::path model = dir.path() / "model";
  fs::create_directories(model);
  for (const auto& e : fs::directory_iterator(tiny_model())) fs::copy_file(e.path(), model / e.path().filename());
  return model;
}

// A counting-arch run (the fake stack plugin): fast, prints "token ids: ..." and no text.
std::vector<std::string> counting_run(const TempDir& dir) {
  std::string bytes(128, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(static_cast<uint8_t>(i * 7 + 3));
  dir.write("model/experts.bin", bytes);
  const auto profile = dir.write("p.yaml",
                                 "model: model\narch: counting\npager: {plugin: passthrough}\n"
                                 "transport: {plugin: pread}\ngenerate: {prompt_ids: [3, 1], max_tokens: 4}\n");
  return {"run", "--profile", profile.string(), "--plugin-dir", moepage::test::fake_stack_dir(), "--log-level", "warn"};
}

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A thrashing lru run of the tiny model: experts are read from the checkpoint at every token,
// and it runs max_tokens whatever the model emits.
std::vector<std::string> thrashing_run(const fs::path& model, const std::string& max_tokens) {
  return {"run",
          "--profile",
          moepage::test::source_path("configs/lru.yaml").string(),
          "--model",
          model.string(),
          "--set",
          "pager.budget=2MiB",
          "--set",
          "generate.ignore_eos=true",
          "--prompt-ids",
          "5,6,7",
          "--max-tokens",
          max_tokens,
          "--log-level",
          "warn"};
}

// The number of ids on the "token ids: ..." line of `out`.
long id_count(const std::string& out) {
  const size_t at = out.find("token ids:");
  if (at == std::string::npos) return -1;
  const std::string line = out.substr(at, out.find('\n', at) - at);
  return long(std::count(line.begin(), line.end(), ' ')) - 1;
}

}  // namespace

TEST_CASE("a full standard output is an error for every command that prints") {
  TempDir dir;
  const std::vector<std::vector<std::string>> commands = {
      {"plugins"},
      {"inspect", tiny_model()},
      {"simulate", recorded_trace(), "--slots", "8", "--policies", "lru"},
      counting_run(dir),
  };
  for (const auto& args : commands) {
    CAPTURE(args.front());
    const auto r = run_moepage(args, "/dev/full");
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "moepage: error: standard output: cannot write: No space left on device"));
  }
}

TEST_CASE("each output flag on a full device is an error naming the flag, the path and errno") {
  TempDir dir;
  for (const char* flag : {"--stats-json", "--dump-logits"}) {
    CAPTURE(flag);
    const auto r = run_moepage(plus(counting_run(dir), {flag, "/dev/full"}));
    CHECK(r.exit_code == 1);
    CHECK(
        contains(r.err, std::string("moepage: error: ") + flag + ": cannot write /dev/full: No space left on device"));
  }
  const auto trace = run_moepage(plus(thrashing_run(tiny_model(), "2"), {"--trace", "/dev/full"}));
  CHECK(trace.exit_code == 1);
  CHECK(contains(trace.err, "moepage: error: --trace: cannot write /dev/full: No space left on device"));
  const auto json =
      run_moepage({"simulate", recorded_trace(), "--slots", "8", "--policies", "lru", "--json", "/dev/full"});
  CHECK(json.exit_code == 1);
  CHECK(contains(json.err, "moepage: error: --json: cannot write /dev/full: No space left on device"));
}

TEST_CASE("an output naming an input or another output is refused before the run, with both paths") {
  TempDir dir;
  const auto run = counting_run(dir);
  const fs::path experts = dir.path() / "model" / "experts.bin";
  const auto before = fs::file_size(experts);
  auto r = run_moepage(plus(run, {"--dump-logits", experts.string()}));
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());  // nothing generated
  CHECK(contains(r.err,
                 "--dump-logits " + experts.string() + " names an input: the model's experts.bin " + experts.string()));
  CHECK(fs::file_size(experts) == before);

  const std::string profile = run[2];
  r = run_moepage(plus(run, {"--stats-json", profile}));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "--stats-json " + profile + " names an input: the profile " + profile));

  const std::string same = (dir.path() / "out.bin").string();
  r = run_moepage(plus(run, {"--stats-json", same, "--dump-logits", same}));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "--stats-json " + same + " names the same file as --dump-logits " + same));

  const std::string nowhere = (dir.path() / "no-such-folder" / "s.json").string();
  r = run_moepage(plus(run, {"--stats-json", nowhere}));
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(contains(r.err, "--stats-json: cannot write " + nowhere + ": folder " +
                            (dir.path() / "no-such-folder").string() + " does not exist"));

  r = run_moepage({"simulate", recorded_trace(), "--slots", "8", "--json", recorded_trace()});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "--json " + recorded_trace() + " names an input: the trace " + recorded_trace()));
}

TEST_CASE("outputs are written whole or not at all: a failed run leaves no partial file") {
  TempDir dir;
  const std::string stats = (dir.path() / "s.json").string();
  auto r = run_moepage(plus(counting_run(dir), {"--stats-json", stats}));
  CHECK(r.exit_code == 0);
  CHECK(nlohmann::json::parse(std::ifstream(stats))["run"]["generated_tokens"] == 4);
  for (const auto& e : fs::directory_iterator(dir.path())) CHECK(!contains(e.path().filename().string(), ".tmp-"));
}

TEST_CASE("SIGINT and SIGTERM during run finish the token, complete the trace and stats, and exit 130 / 143") {
  TempDir dir;
  for (const int signo : {SIGINT, SIGTERM}) {
    CAPTURE(signo);
    const std::string trace = (dir.path() / ("t" + std::to_string(signo) + ".csv")).string();
    const std::string stats = (dir.path() / ("s" + std::to_string(signo) + ".json")).string();
    RunningMoepage child(plus(thrashing_run(tiny_model(), "4000"), {"--trace", trace, "--stats-json", stats}));
    REQUIRE(child.wait_for_output(""));  // generation has started
    child.send(signo);
    const auto r = child.finish();
    CHECK(r.signal == 0);
    CHECK(r.exit_code == 128 + signo);
    CHECK(contains(r.err, "interrupted by signal " + std::to_string(signo)));
    CHECK(contains(r.out, "token ids:"));
    const auto j = nlohmann::json::parse(std::ifstream(stats));
    CHECK(j["run"]["generated_tokens"].get<int>() >= 1);
    CHECK(j["run"]["generated_tokens"].get<int>() < 4000);
    std::ifstream in(trace);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(!text.empty());
    CHECK(text.back() == '\n');
    const auto sim = run_moepage({"simulate", trace, "--slots", "8", "--policies", "lru,belady"});
    CHECK(sim.exit_code == 0);
    CHECK(sim.err.empty());
  }
}

TEST_CASE("a checkpoint truncated under a running process ends in an error line, not a signal") {
  TempDir dir;
  const fs::path model = copy_tiny_model(dir);
  RunningMoepage child(thrashing_run(model, "4000"));
  REQUIRE(child.wait_for_output(""));  // the dense weights are loaded and tokens are coming
  fs::resize_file(model / "model.safetensors", fs::file_size(model / "model.safetensors") / 2);
  const auto r = child.finish();
  CHECK(r.signal == 0);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "moepage: error: "));
  CHECK(contains(r.err, (model / "model.safetensors").string() + ": the file changed while in use (size "));
}

TEST_CASE("run without --profile uses the default profile and the model's generation_config.json") {
  const auto r = run_moepage({"run", "--model", tiny_model(), "--prompt", "To install the package, run"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "(the default; --profile picks another)"));
  CHECK(contains(r.err, "generate.max_tokens from " + tiny_model() + "/generation_config.json"));
  CHECK(contains(r.err, "generate.temperature from " + tiny_model() + "/generation_config.json"));
  // The text ends with its own line before the ids; generation_config.json asks for 64 tokens.
  const size_t ids = r.out.find("token ids:");
  REQUIRE(ids != std::string::npos);
  REQUIRE(ids > 0);
  CHECK(r.out[ids - 1] == '\n');
  const long n = id_count(r.out);
  CHECK((n == 64 || (n < 64 && contains(r.out, " 1\n"))));  // 64, or fewer ending in the end-of-sequence id 1

  // A value the user gives wins over generation_config.json.
  const auto set = run_moepage({"run", "--model", tiny_model(), "--prompt-ids", "5,6", "--max-tokens", "3"});
  CHECK(set.exit_code == 0);
  CHECK(!contains(set.err, "generate.max_tokens from"));
  CHECK(id_count(set.out) >= 1);
  CHECK(id_count(set.out) <= 3);
}

TEST_CASE("--prompt and --prompt-ids together are a usage error") {
  const auto r = run_moepage({"run", "--model", tiny_model(), "--prompt", "x", "--prompt-ids", "1"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--prompt and --prompt-ids both given; pass one"));
}

TEST_CASE("negative numbers on the command line are refused, never wrapped") {
  TempDir dir;
  const std::string out = (dir.path() / "x").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"synth", "--out", out, "--layers", "-1"}, "--layers: expected an integer from 1 to 256, got '-1'"},
      {{"synth", "--out", out, "--experts", "-4"}, "--experts: expected an integer from 1 to 1024, got '-4'"},
      {{"synth", "--out", out, "--seed", "-1"}, "--seed: expected an integer from 0 to"},
      {{"adapter", "--random", "--out", out, "--layers", "-3", "--d-model", "8", "--experts", "4"},
       "--layers: expected an integer from 2 to 256, got '-3'"},
      {{"adapter", "--random", "--out", out, "--layers", "3", "--d-model", "8", "--experts", "4", "--rank", "-1"},
       "--rank: expected an integer from 1 to 8, got '-1'"},
      {{"ablate", moepage::test::source_path("configs/ablations/demo.yaml").string(), "--repetitions", "-1"},
       "--repetitions: expected an integer from 1 to 1000, got '-1'"},
      {{"conform", "x.so", "--seed", "-2"}, "--seed: expected an integer from 0 to"},
  };
  for (const auto& [args, message] : cases) {
    CAPTURE(args[0]);
    CAPTURE(message);
    const auto r = run_moepage(args);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "moepage: usage error: " + message));
  }
  CHECK(!fs::exists(out));
}

TEST_CASE("sizes a user gives are bounded") {
  TempDir dir;
  const std::string out = (dir.path() / "x").string();
  auto r = run_moepage({"synth", "--out", out, "--layers", "100000"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--layers: expected an integer from 1 to 256, got '100000'"));
  r = run_moepage({"adapter", "--random", "--out", out, "--layers", "256", "--d-model", "65536", "--experts", "4096",
                   "--rank", "1024"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "the limit is 1024 MiB (lower --rank)"));
  r = run_moepage(
      {"ablate", moepage::test::source_path("configs/ablations/demo.yaml").string(), "--repetitions", "4000000000"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--repetitions: expected an integer from 1 to 1000, got '4000000000'"));
  CHECK(!fs::exists(out));
}

TEST_CASE("synth --out refuses a non-empty folder unless --force") {
  TempDir dir;
  const fs::path model = dir.path() / "model";
  dir.write("model/config.json", "{}");
  auto r = run_moepage({"synth", "--preset", "tiny", "--layers", "2", "--out", model.string()});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--out " + model.string() + " is not empty; pass --force to replace what it holds"));
  CHECK(fs::file_size(model / "config.json") == 2);
  r = run_moepage({"synth", "--preset", "tiny", "--layers", "2", "--out", model.string(), "--force"});
  CHECK(r.exit_code == 0);
  CHECK(fs::file_size(model / "config.json") > 2);
}

TEST_CASE("a NaN router bias or a short num_hidden_layers is refused at load, naming the file and the key") {
  TempDir dir;
  const fs::path model = copy_tiny_model(dir);
  {
    const auto ck = moepage::ckpt::Checkpoint::open(model);
    const moepage::ckpt::TensorInfo& bias = ck.at("layers.4.ffn.gate.bias");
    REQUIRE(bias.dtype == moepage::Dtype::F32);
    std::fstream f(model / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    f.seekp(std::streamoff(bias.offset + 4 * 3));
    f.write(reinterpret_cast<const char*>(&nan), 4);
  }
  auto r = run_moepage(thrashing_run(model, "2"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, (model / "model.safetensors").string() +
                            ": tensor 'layers.4.ffn.gate.bias': element 3 is NaN or infinite"));

  TempDir other;
  const fs::path short_model = copy_tiny_model(other);
  auto config = nlohmann::json::parse(std::ifstream(short_model / "config.json"));
  config["num_hidden_layers"] = 4;
  std::ofstream(short_model / "config.json") << config.dump();
  r = run_moepage(thrashing_run(short_model, "2"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, (short_model / "config.json").string() +
                            ": key 'num_hidden_layers': 4, but the checkpoint holds layer 4"));
}

TEST_CASE("a corrupt .xz trace reports the decoder's own reason, naming the file") {
  TempDir dir;
  const auto bad = dir.write("bad.trace.xz", std::string(64, 'x'));
  const auto r = run_moepage({"simulate", bad.string(), "--slots", "4"});
  CHECK(r.exit_code == 1);
  CHECK(!contains(r.err, "install"));
  CHECK(contains(r.err, "cannot decompress trace " + bad.string() + ": not in the .xz format"));
}

TEST_CASE("a --plugin-dir that does not exist is an error") {
  const auto r = run_moepage({"plugins", "--plugin-dir", "/no/such/plugins"});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "moepage: error: --plugin-dir /no/such/plugins: no such folder"));
}

TEST_CASE("when no architecture takes a folder, each says why it declined") {
  TempDir dir;
  dir.write("llama/config.json", R"({"model_type": "llama"})");
  fs::create_directories(dir.path() / "empty");
  const std::string defaults = moepage::test::source_path("configs/default.yaml").string();
  auto r = run_moepage({"run", "--profile", defaults, "--model", (dir.path() / "llama").string()});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "(deepseek4: declines " + (dir.path() / "llama").string() + ": " +
                            (dir.path() / "llama" / "config.json").string() +
                            ": model_type is \"llama\", not \"deepseek_v4\")"));
  r = run_moepage({"run", "--profile", defaults, "--model", (dir.path() / "empty").string()});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, (dir.path() / "empty" / "config.json").string() + " cannot be read"));
}

TEST_CASE("the architecture's options are set from the profile or --set") {
  auto r = run_moepage(
      {"run", "--model", tiny_model(), "--prompt-ids", "5,6,7", "--max-tokens", "8", "--set", "arch.max_context=4"});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "exceeds the model's 4 positions"));
  r = run_moepage({"run", "--model", tiny_model(), "--prompt-ids", "5", "--set", "arch.threadz=2"});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "unknown key 'arch.threadz' for arch plugin 'deepseek4'"));
}
