// `moepage run --ranks N --set device=hip` on the committed tiny DeepSeek-V4, the way a user runs
// it: the ranks' greedy ids are one GPU rank's, for the resident and the lru pager, whether the
// ranks share a GPU (the sum goes through pinned memory) or each has its own (NCCL, when the
// library loads). The run's log says which.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/child_process.hpp"
#include "host/device_service.hpp"
#include "support/test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using moepage::test::ChildResult;
using moepage::test::ids_line;
using moepage::test::run_moepage;

ChildResult gpu_run(uint32_t ranks, const std::string& pager, const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"run",
                                   "--model",
                                   moepage::test::source_path("models/ds4-debian-tiny").string(),
                                   "--set",
                                   "device=hip",
                                   "--set",
                                   "generate.ignore_eos=true",
                                   "--prompt-ids",
                                   "1,17,300,4000,42",
                                   "--max-tokens",
                                   "24",
                                   "--ranks",
                                   std::to_string(ranks)};
  // A profile always: the build tree has no installed default.
  const std::string profile = pager == "lru" ? "configs/lru.yaml" : "configs/default.yaml";
  args.insert(args.end(), {"--profile", moepage::test::source_path(profile).string()});
  if (pager == "lru") args.insert(args.end(), {"--set", "pager.budget=2MiB"});
  args.insert(args.end(), more.begin(), more.end());
  return run_moepage(args);
}

// The NCCL that tools/device/test_env.sh found, else the profile's default (libnccl.so.2).
std::vector<std::string> library_setting() {
  const char* path = std::getenv("MOEPAGE_TEST_NCCL_LIBRARY");
  if (path == nullptr || *path == '\0') return {};
  return {"--set", std::string("parallel.collective_library=") + path};
}

}  // namespace

TEST_CASE("two and three GPU ranks give one GPU rank's greedy ids, resident and lru") {
  const int gpus = moepage::host::hip_device_count();
  REQUIRE(gpus >= 1);
  for (const std::string pager : {"resident", "lru"}) {
    CAPTURE(pager);
    const ChildResult one = gpu_run(1, pager);
    INFO(one.err);
    REQUIRE(one.exit_code == 0);
    const std::vector<int32_t> reference = ids_line(one.out);
    REQUIRE(reference.size() == 24);
    for (uint32_t ranks : {2u, 3u}) {
      CAPTURE(ranks);
      const ChildResult r = gpu_run(ranks, pager, library_setting());
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      CHECK(r.err.find("GPU forward pass") != std::string::npos);
      CHECK(ids_line(r.out) == reference);
      // Ranks that share a GPU sum through the host; one GPU each, through the library.
      if (ranks > uint32_t(gpus)) CHECK(r.err.find("summed on the host through pinned memory") != std::string::npos);
      else CHECK(r.err.find("summed on the GPUs by") != std::string::npos);
    }
  }
}

TEST_CASE("parallel.collective=nccl with ranks sharing a GPU is a one-line error naming the key and the devices") {
  const int gpus = moepage::host::hip_device_count();
  std::vector<std::string> more = library_setting();
  more.insert(more.end(), {"--set", "parallel.collective=nccl", "--log-level", "warn"});
  const ChildResult r = gpu_run(uint32_t(gpus) + 1, "resident", more);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("parallel.collective (--set parallel.collective=nccl): collective library") != std::string::npos);
  CHECK(r.err.find("needs a GPU per rank, but ranks 0 and " + std::to_string(gpus) + " share device 0") !=
        std::string::npos);
}
