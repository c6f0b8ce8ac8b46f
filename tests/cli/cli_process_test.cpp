#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "cli/commands.hpp"
#include "support/abi_text.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

using moepage::test::abi_text;
using moepage::test::contains;
using moepage::test::run_moepage;
using moepage::test::TempDir;

namespace {

size_t line_count(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("--version prints the project version and the plugin ABI and exits 0") {
  auto r = run_moepage({"--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == std::string("moepage ") + MOEPAGE_PROJECT_VERSION + " (plugin ABI " + abi_text() + ")\n");
}

TEST_CASE("--help lists every command and exits 0") {
  auto r = run_moepage({"--help"});
  CHECK(r.exit_code == 0);
  for (const auto& c : moepage::cli::kCommands) CHECK(contains(r.out, "  " + std::string(c.name) + " "));
}

TEST_CASE("every subcommand answers --help with its usage and exits 0") {
  for (const auto& c : moepage::cli::kCommands) {
    CAPTURE(c.name);
    auto r = run_moepage({std::string(c.name), "--help"});
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("usage: moepage " + std::string(c.name), 0) == 0);
    CHECK(contains(r.out, "--log-level"));
  }
}

TEST_CASE("no command, an unknown command or an unknown option is a usage error with exit 2") {
  CHECK(run_moepage({}).exit_code == 2);
  auto unknown = run_moepage({"frobnicate"});
  CHECK(unknown.exit_code == 2);
  std::string known;
  for (const auto& c : moepage::cli::kCommands) known += (known.empty() ? "" : ", ") + std::string(c.name);
  CHECK(unknown.err == "moepage: usage error: unknown command 'frobnicate' (commands: " + known + ")\n");
  auto option = run_moepage({"plugins", "--frob"});
  CHECK(option.exit_code == 2);
  CHECK(contains(option.err, "moepage: usage error: unrecognised option '--frob'"));
  auto level = run_moepage({"--log-level", "loud", "plugins"});
  CHECK(level.exit_code == 2);
  CHECK(contains(level.err, "unknown log level 'loud'"));
  auto missing = run_moepage({"simulate"});
  CHECK(missing.exit_code == 2);
  CHECK(contains(missing.err, "'--slots' is required"));
}

TEST_CASE("a profile that cannot be read is one error line and exit 1") {
  TempDir dir;
  const std::string path = (dir.path() / "absent.yaml").string();
  auto r = run_moepage({"run", "--profile", path});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "moepage: error: cannot read profile '" + path + "': no such file\n");
}

TEST_CASE("plugins lists the pread transport with its version, ABI, library and options") {
  auto r = run_moepage({"plugins"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "transport pread 0.1.0  (ABI " + abi_text()));
  CHECK(contains(r.out, "library: " + (moepage::test::plugin_dir() / "libmoepage-transport-pread.so").string()));
  CHECK(contains(r.out, "threads  int   default 4     reader threads"));
  CHECK(contains(r.out, "chunk    size  default 4MiB  "));
}

TEST_CASE("plugins lists the io-uring transport and every one of its options") {
  auto r = run_moepage({"plugins"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "transport io-uring 0.1.0  (ABI " + abi_text()));
  for (const char* option : {"queue_depth ", "buffers ", "buffer_size ", "direct ", "fixed_buffers ", "sqpoll "}) {
    CAPTURE(option);
    CHECK(contains(r.out, option));
  }
  CHECK(contains(r.out, "auto|on|off"));
}

TEST_CASE("plugins lists all seven built-in components") {
  auto r = run_moepage({"plugins"});
  CHECK(r.exit_code == 0);
  for (const char* component : {"arch deepseek4 ", "pager resident ", "pager paged ", "pager lru ",
                                "pager adapter-prefetch ", "transport pread ", "transport pinned-async "}) {
    CAPTURE(component);
    CHECK(contains(r.out, "\n" + std::string(component)));
  }
  CHECK(contains(r.out, "adapter          path"));
  CHECK(contains(r.out, "split_trace      path"));
  CHECK(contains(r.out, "split_objective  enum(reads|misses)"));
  CHECK(contains(r.out, "(required)"));
  CHECK(contains(r.out, "lru|lfu|lfru"));
}

TEST_CASE("run names the profile line and the available pagers when the pager does not exist") {
  TempDir dir;
  auto profile = dir.write("p.yaml", "model: .\npager: {plugin: nope}\ntransport: {plugin: pread}\n");
  auto r = run_moepage({"run", "--profile", profile.string()});
  CHECK(r.exit_code == 1);
  CHECK(line_count(r.err) == 1);
  CHECK(contains(r.err, "moepage: error: " + profile.string() +
                            ":2:17: pager.plugin: no pager plugin named 'nope'; "
                            "available: adapter-prefetch, lru, paged, resident"));
}

TEST_CASE("run refuses a transport option the plugin does not declare, listing the valid ones") {
  TempDir dir;
  auto profile = dir.write("p.yaml", "model: .\npager: {plugin: resident}\ntransport: {plugin: pread, thread: 2}\n");
  auto r = run_moepage({"run", "--profile", profile.string()});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "moepage: error: " + profile.string() +
                     ":3:36: unknown key 'transport.thread' for transport plugin 'pread' (valid keys: threads, "
                     "chunk)\n");
}

TEST_CASE("--set is applied before the options are checked") {
  TempDir dir;
  auto profile = dir.write("p.yaml", "model: .\npager: {plugin: resident}\ntransport: {plugin: pread}\n");
  auto r = run_moepage({"run", "--profile", profile.string(), "--set", "transport.chunk=lots"});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "--set transport.chunk=lots: transport.chunk: transport plugin 'pread' expects a size"));
}

TEST_CASE("run picks the architecture by probing and reports its create error as one line") {
  // config.json alone satisfies deepseek4's probe but not its loader, which must say why.
  TempDir dir;
  dir.write("model/config.json", R"({"model_type": "deepseek_v4"})");
  auto r = run_moepage({"run", "--profile", moepage::test::source_path("configs/default.yaml").string(), "--model",
                        (dir.path() / "model").string(), "--log-level", "error"});
  CHECK(r.exit_code == 1);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.rfind("moepage: error: arch 'deepseek4': create failed (", 0) == 0);
}

TEST_CASE("run says when no architecture recognises the model folder") {
  TempDir dir;
  dir.write("model/config.json", R"({"model_type": "llama"})");
  auto r = run_moepage({"run", "--profile", moepage::test::source_path("configs/default.yaml").string(), "--model",
                        (dir.path() / "model").string()});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "no architecture plugin recognises the model folder " + (dir.path() / "model").string()));
}

TEST_CASE("plugins shows a refused library with its reason") {
  const std::string dir = moepage::test::build_path("fake-plugins/wrong-major").string();
  auto r = run_moepage({"plugins", "--plugin-dir", dir, "--log-level", "off"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "\nrefused:\n"));
  CHECK(contains(r.out, "refused plugin " + dir));
  CHECK(contains(r.out, "ABI major version mismatch"));
}

namespace {

// The bytes of the fake "counting" arch's experts.bin: two 64-byte experts.
std::string counting_experts() {
  std::string bytes(128, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(static_cast<uint8_t>(i * 7 + 3));
  return bytes;
}

// A folder holding a model for the fake stack (arch counting, pager passthrough) whose
// experts.bin is `experts`.
struct CountingModel {
  TempDir dir;

  explicit CountingModel(const std::string& experts = counting_experts()) { dir.write("model/experts.bin", experts); }

  // `moepage run ARGS...` with the profile lines `rest` (transport, generate) after the stack's.
  moepage::test::ChildResult run(const std::string& rest, const std::vector<std::string>& args) const {
    const auto profile = dir.write("p.yaml", "model: model\narch: counting\npager: {plugin: passthrough}\n" + rest);
    std::vector<std::string> argv{"run", "--profile", profile.string(), "--plugin-dir",
                                  moepage::test::fake_stack_dir()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_moepage(argv);
  }
};

}  // namespace

TEST_CASE("an architecture without join_ranks (ABI 1.7) runs one rank only: more are refused naming it") {
  const CountingModel model;
  auto r = model.run("transport: {plugin: pread}\ngenerate: {prompt_ids: [3, 1], max_tokens: 2}\n",
                     {"--ranks", "2", "--log-level", "warn"});
  CHECK(r.exit_code != 0);
  CHECK(contains(r.err,
                 "parallel.ranks (--ranks 2): arch 'counting' cannot run as several ranks (it has no "
                 "join_ranks, plugin ABI 1.7)"));
}

TEST_CASE("run drives arch, pager and pread transport end to end and prints the generated ids") {
  const CountingModel model;
  auto r = model.run("transport: {plugin: pread, threads: 2}\ngenerate: {prompt_ids: [3, 1], max_tokens: 4}\n",
                     {"--log-level", "warn"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out == "token ids: 2 3 4 5\n");
}

TEST_CASE("transport: {plugin: auto} takes the best-scoring transport on this host, says so, and checks its options") {
  const CountingModel model;
  auto r = model.run("transport: {plugin: auto, threads: 2}\ngenerate: {prompt_ids: [3, 1], max_tokens: 4}\n",
                     {"--log-level", "info"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "token ids: 2 3 4 5\n");
  // pread ranks itself 10 everywhere, pinned-async 5 on the CPU device; fault-inject has no score.
  CHECK(contains(r.err, "transport.plugin: auto chose 'pread' (score 10 on this host)"));
}

TEST_CASE("run stops at the end-of-sequence token and --prompt-ids and --max-tokens override the profile") {
  const CountingModel model;
  auto r = model.run("transport: {plugin: pread}\ngenerate: {prompt_ids: [3], max_tokens: 2}\n",
                     {"--prompt-ids", "12,13", "--max-tokens", "9", "--log-level", "warn"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "token ids: 14 15\n");  // 15 is the fake model's end-of-sequence token
}

TEST_CASE("a read failure deep in the stack reaches the user as one error line") {
  const CountingModel model(std::string(100, 'x'));  // shorter than the two experts it should hold
  auto r =
      model.run("transport: {plugin: pread}\ngenerate: {prompt_ids: [1], max_tokens: 2}\n", {"--log-level", "warn"});
  CHECK(r.exit_code == 1);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.rfind("moepage: error: arch 'counting': forward failed (io): ", 0) == 0);
  CHECK(contains(r.err, "unexpected end of file at offset 64 (wanted 64 bytes, got 36)"));
}

TEST_CASE("a prompt id outside the vocabulary is refused before decoding") {
  const CountingModel model;
  auto r = model.run("transport: {plugin: pread}\n", {"--prompt-ids", "99"});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "prompt token id 99 is outside the model's vocabulary (0 to 15)"));
}

TEST_CASE("a bad value in a shortcut flag is named as the flag the user typed") {
  TempDir dir;
  auto profile = dir.write("p.yaml", "model: .\npager: {plugin: resident}\ntransport: {plugin: pread}\n");
  auto r = run_moepage({"run", "--profile", profile.string(), "--max-tokens", "many"});
  CHECK(r.exit_code == 1);
  CHECK(r.err ==
        "moepage: error: --max-tokens many: generate.max_tokens: expected an integer from 1 to 1000000, got "
        "'many'\n");
}

TEST_CASE("arch.timeline logs one line per prompt batch with every layer, and nothing without it") {
  const std::string model = moepage::test::source_path("models/ds4-debian-tiny").string();
  const std::vector<std::string> base = {"run",
                                         "--profile",
                                         moepage::test::source_path("configs/default.yaml").string(),
                                         "--model",
                                         model,
                                         "--prompt-ids",
                                         "5,9,13,2,77,31,8",
                                         "--max-tokens",
                                         "2",
                                         "--set",
                                         "arch.max_batch=4"};
  std::vector<std::string> timed = base;
  timed.insert(timed.end(), {"--set", "arch.timeline=true"});
  auto r = run_moepage(timed);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "deepseek4: prompt batch of 4 tokens: "));
  CHECK(contains(r.err, "deepseek4: prompt batch of 3 tokens: "));
  CHECK(contains(r.err, "; layer 7 mHC "));  // the tiny model's 8 layers
  CHECK(!contains(r.err, "; layer 8 "));
  CHECK(!contains(r.err, "prompt batch of 1 tokens"));  // decode steps are not timed
  auto plain = run_moepage(base);
  CHECK(plain.exit_code == 0);
  CHECK(!contains(plain.err, "prompt batch of"));
}
