// Expert parallelism through `moepage run` (parallel.ranks / --ranks): N ranks as threads, each
// with its own architecture, transport and pager over its share of the experts, give the same
// greedy ids as one rank, for the resident and the lru pager, on the committed trained model and
// on a `moepage synth` model; the ranks' resident pagers together read what one rank reads; bad
// rank counts and partitions are one-line errors naming the key.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "fileio/text_file.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using moepage::test::ChildResult;
using moepage::test::contains;
using moepage::test::ids_line;
using moepage::test::run_moepage;
using moepage::test::TempDir;

namespace {

std::string ep_tiny_model() { return moepage::test::source_path("models/ds4-debian-tiny").string(); }

// `moepage run` of `model` greedily, with `ranks` ranks and the resident or the lru pager.
ChildResult ep_run(const std::string& model, const std::string& pager, int ranks, const fs::path& stats = {},
                   const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"run",
                                   "--model",
                                   model,
                                   "--set",
                                   "generate.ignore_eos=true",
                                   "--set",
                                   "arch.threads=1",
                                   "--prompt-ids",
                                   "5,17,3",
                                   "--max-tokens",
                                   "6",
                                   "--ranks",
                                   std::to_string(ranks),
                                   "--log-level",
                                   "warn"};
  if (pager == "lru")
    args.insert(args.end(),
                {"--profile", moepage::test::source_path("configs/lru.yaml").string(), "--set", "pager.budget=2MiB"});
  if (!stats.empty()) args.insert(args.end(), {"--stats-json", stats.string()});
  args.insert(args.end(), more.begin(), more.end());
  return run_moepage(args);
}

uint64_t ep_load_bytes(const nlohmann::json& pager) { return pager.at("load_bytes_read").get<uint64_t>(); }

// The last line of stderr: errors are one line.
std::string ep_last_line(const std::string& err) {
  std::string text = err;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
}

}  // namespace

TEST_CASE("two ranks give one rank's greedy ids on ds4-debian-tiny, resident and lru; resident ranks split the load") {
  const TempDir dir("ep-run");
  const ChildResult one = ep_run(ep_tiny_model(), "resident", 1, dir.path() / "one.json");
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  const std::vector<int32_t> ids = ids_line(one.out);
  REQUIRE(ids.size() == 6);
  const ChildResult two = ep_run(ep_tiny_model(), "resident", 2, dir.path() / "two.json");
  REQUIRE_MESSAGE(two.exit_code == 0, two.err);
  CHECK(ids_line(two.out) == ids);
  const ChildResult lru = ep_run(ep_tiny_model(), "lru", 2, dir.path() / "lru.json");
  REQUIRE_MESSAGE(lru.exit_code == 0, lru.err);
  CHECK(ids_line(lru.out) == ids);

  // Each resident rank loaded its half of the experts, and no expert twice.
  const auto single = nlohmann::json::parse(moepage::fileio::read_file(dir.path() / "one.json"));
  const auto split = nlohmann::json::parse(moepage::fileio::read_file(dir.path() / "two.json"));
  REQUIRE(split.contains("ranks"));
  REQUIRE(split["ranks"].size() == 2);
  const uint64_t r0 = ep_load_bytes(split["ranks"][0]["pager"]), r1 = ep_load_bytes(split["ranks"][1]["pager"]);
  CHECK(r0 == r1);
  CHECK(r0 + r1 == ep_load_bytes(single["pager"]));
  CHECK(ep_load_bytes(split["pager"]) == ep_load_bytes(single["pager"]));
  CHECK(split["pager"]["accesses"] == single["pager"]["accesses"]);  // every expert use counted once
  // An lru rank never reads an expert it does not own: the ranks' misses read no more than their accesses.
  const auto paged = nlohmann::json::parse(moepage::fileio::read_file(dir.path() / "lru.json"));
  CHECK(paged["pager"]["accesses"] == single["pager"]["accesses"]);
}

TEST_CASE("three ranks give one rank's greedy ids on a synthesized model, resident and lru") {
  const TempDir dir("ep-synth");
  const std::string model = (dir.path() / "model").string();
  const ChildResult synth = run_moepage({"synth", "--preset", "tiny", "--out", model, "--log-level", "warn"});
  REQUIRE_MESSAGE(synth.exit_code == 0, synth.err);
  const ChildResult one = ep_run(model, "resident", 1);
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  REQUIRE(ids_line(one.out).size() == 6);
  for (const char* pager : {"resident", "lru"}) {
    INFO(pager);
    const ChildResult three = ep_run(model, pager, 3);
    REQUIRE_MESSAGE(three.exit_code == 0, three.err);
    CHECK(ids_line(three.out) == ids_line(one.out));
  }
}

TEST_CASE("a partition table (halves of the experts) gives one rank's greedy ids too") {
  const TempDir dir("ep-table");
  std::string row;
  for (int e = 0; e < 64; ++e) row += e < 32 ? "0 " : "1 ";
  const fs::path table =
      dir.write("halves.txt", "# experts 0-31 on rank 0, 32-63 on rank 1, every layer\n" + row + "\n");
  const ChildResult one = ep_run(ep_tiny_model(), "resident", 1);
  const ChildResult two =
      ep_run(ep_tiny_model(), "lru", 2, {},
             {"--set", "parallel.partition=table", "--set", "parallel.partition_table=" + table.string()});
  REQUIRE_MESSAGE(two.exit_code == 0, two.err);
  CHECK(ids_line(two.out) == ids_line(one.out));

  dir.write("bad.txt", row + "\n1\n");
  const ChildResult bad = ep_run(
      ep_tiny_model(), "resident", 2, {},
      {"--set", "parallel.partition=table", "--set", "parallel.partition_table=" + (dir.path() / "bad.txt").string()});
  CHECK(bad.exit_code != 0);
  CHECK(contains(ep_last_line(bad.err), "parallel.partition_table (--set parallel.partition_table="));
  CHECK(contains(ep_last_line(bad.err), "bad.txt:2: 1 ranks, the model has 64 experts per layer"));

  const ChildResult missing = ep_run(ep_tiny_model(), "resident", 2, {}, {"--set", "parallel.partition=table"});
  CHECK(missing.exit_code != 0);
  CHECK(contains(ep_last_line(missing.err), "parallel.partition: expected round_robin, or table with"));
}

TEST_CASE("a rank whose expert read fails ends the run with its error; the other rank does not wait forever") {
  const ChildResult failed = ep_run(ep_tiny_model(), "lru", 2, {},
                                    {"--set", "transport.plugin=fault-inject", "--set", "transport.fail_every=7"});
  CHECK(failed.exit_code != 0);
  const std::string line = ep_last_line(failed.err);
  CHECK(contains(line, "failed: "));
  CHECK(contains(line, "injected EIO"));
  CHECK(contains(line, "layer"));
  CHECK((contains(line, "rank 0 failed") || contains(line, "rank 1 failed")));
  CHECK(contains(line, "'s pager numbers its experts of layer"));  // the pager's local ids, mapped
}

TEST_CASE("bad rank counts and partitions are one-line errors naming the key") {
  const ChildResult zero = ep_run(ep_tiny_model(), "resident", 0);
  CHECK(zero.exit_code != 0);
  CHECK(contains(ep_last_line(zero.err), "parallel.ranks"));
  CHECK(contains(ep_last_line(zero.err), "--ranks 0"));

  const ChildResult many = ep_run(ep_tiny_model(), "resident", 65);
  CHECK(many.exit_code != 0);
  CHECK(contains(ep_last_line(many.err), "parallel.ranks"));
  CHECK(contains(ep_last_line(many.err), "65 ranks but the model has 64 routed experts"));

  const ChildResult partition =
      run_moepage({"run", "--model", ep_tiny_model(), "--prompt-ids", "5", "--max-tokens", "1", "--ranks", "2", "--set",
                   "parallel.partition=blocks", "--log-level", "warn"});
  CHECK(partition.exit_code != 0);
  CHECK(contains(ep_last_line(partition.err), "parallel.partition"));
  CHECK(contains(ep_last_line(partition.err), "one of round_robin|table"));

  const ChildResult key = run_moepage(
      {"run", "--model", ep_tiny_model(), "--prompt-ids", "5", "--set", "parallel.rank=2", "--log-level", "warn"});
  CHECK(key.exit_code != 0);
  CHECK(contains(ep_last_line(key.err), "unknown key 'parallel.rank'"));
}

TEST_CASE("the ranks' collective: nccl on the CPU and unknown choices are one-line errors; host runs as auto") {
  const ChildResult nccl = ep_run(ep_tiny_model(), "resident", 2, {}, {"--set", "parallel.collective=nccl"});
  CHECK(nccl.exit_code != 0);
  CHECK(contains(ep_last_line(nccl.err),
                 "parallel.collective (--set parallel.collective=nccl): nccl sums in GPU "
                 "memory, but the profile's device is cpu"));

  const ChildResult bad = ep_run(ep_tiny_model(), "resident", 2, {}, {"--set", "parallel.collective=mpi"});
  CHECK(bad.exit_code != 0);
  CHECK(contains(ep_last_line(bad.err), "parallel.collective"));
  CHECK(contains(ep_last_line(bad.err), "one of auto|host|nccl"));

  const ChildResult one = ep_run(ep_tiny_model(), "resident", 1);
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  const ChildResult host =
      ep_run(ep_tiny_model(), "resident", 2, {},
             {"--set", "parallel.collective=host", "--set", "parallel.collective_library=/nonexistent/libnccl.so.2"});
  REQUIRE_MESSAGE(host.exit_code == 0, host.err);
  CHECK(ids_line(host.out) == ids_line(one.out));
}
