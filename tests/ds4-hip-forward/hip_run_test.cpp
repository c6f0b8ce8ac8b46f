// `moepage run --set device=hip` on the committed tiny DeepSeek-V4 (models/ds4-debian-tiny), the
// way a user runs it: the neutrality gate on the GPU. Greedy ids over 64 tokens are identical to
// the CPU resident run for resident, lru with 48 slots per layer, lru at top-k slots (every token
// thrashes) over pread and pinned-async, and adapter-prefetch with a random adapter (valid, so its
// prefetches must not change a token); lru again with its experts looked up on the device
// (arch.slot_table), whose pager must count what it counted without. Budgets and the adapter come
// from the neutrality helpers.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/child_process.hpp"
#include "neutrality/neutrality_harness.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using moepage::test::ids_line;
using moepage::test::run_moepage;

constexpr uint32_t kTokens = 64;

struct Arm {
  std::string name;
  std::string pager;          // the profile's pager section, flow style
  std::string transport;      // the profile's transport section, flow style
  std::string arch_set = "";  // one more --set for the arch (empty: none)
  // An arm earlier in the list whose pager must have seen the same accesses, hits and misses (the
  // same arm without arch_set), and whether this one looked its experts up on the device.
  std::string twin = "";
  bool slot_lookups = false;
};

// "expert accesses A, hits H, misses M" of the run's pager statistics line ("" when absent).
std::string pager_counts(const std::string& err) {
  const size_t at = err.find("expert accesses ");
  if (at == std::string::npos) return "";
  return err.substr(at, err.find(", hit rate", at) - at);
}

// A profile of its own per arm (no base: chain, so no option of another transport leaks in).
fs::path write_profile(const fs::path& dir, const Arm& arm, const fs::path& model, size_t index) {
  const fs::path path = dir / ("arm-" + std::to_string(index) + ".yaml");
  std::ofstream(path) << "model: " << model.string() << "\n"
                      << "device: cpu\n"
                      << "pager: " << arm.pager << "\n"
                      << "transport: " << arm.transport << "\n"
                      << "generate: {prompt_ids: [1, 17, 300, 4000, 42], max_tokens: " << kTokens
                      << ", temperature: 0, seed: 0}\n"
                      << "log: {level: info}\n";
  return path;
}

}  // namespace

TEST_CASE("moepage run --set device=hip: greedy ids identical to the CPU across pagers, budgets and transports") {
  const fs::path model = moepage::test::source_path("models/ds4-debian-tiny");
  REQUIRE(fs::exists(model / "config.json"));
  const moepage::test::TempDir tmp("hip-run");
  const fs::path& dir = tmp.path();

  moepage::test::Harness h;
  const mp_model_info info = h.describe(model);
  const uint32_t k = info.top_k;
  REQUIRE(info.n_experts > 48);
  const fs::path adapter = dir / "random.hfadpt";
  moepage::test::write_random_adapter(info, adapter);
  auto lru = [&](uint32_t slots) {
    return "{plugin: lru, budget: " + std::to_string(h.budget_for(model, slots)) + "}";
  };
  const std::string pread = "{plugin: pread, threads: 2}";
  const std::string pinned = "{plugin: pinned-async, threads: 2, staging: 256KiB}";

  const std::vector<Arm> arms = {
      {"resident / pread", "{plugin: resident}", pread},
      {"lru 48 slots / pread", lru(48), pread},
      {"lru top-k slots / pread", lru(k), pread},
      {"lru top-k slots / pinned-async", lru(k), pinned},
      // The arms above with the arch's default; this one queues each greedy step's front before the
      // pick reaches the host.
      {"lru top-k slots / pinned-async, run ahead", lru(k), pinned, "arch.run_ahead=true"},
      // A decode step's shared expert on the compute stream before the router, paged.
      {"lru 48 slots / pread, shared expert first", lru(48), pread, "arch.decode_shared_expert=first"},
      // Experts looked up on the device: every token thrashing (a stall in most layers), and most
      // hitting; the pager must see exactly what it saw without the lookup.
      {"lru top-k slots / pinned-async, slot table", lru(k), pinned, "arch.slot_table=true",
       "lru top-k slots / pinned-async", true},
      {"lru 48 slots / pread, slot table", lru(48), pread, "arch.slot_table=true", "lru 48 slots / pread", true},
      {"adapter-prefetch / pinned-async",
       "{plugin: adapter-prefetch, adapter: '" + adapter.string() +
           "', budget: " + std::to_string(h.budget_for(model, k + 2)) + "}",
       pinned},
  };

  // The reference: the CPU, every expert resident.
  const auto cpu =
      run_moepage({"run", "--profile", write_profile(dir, arms[0], model, 0).string(), "--log-level", "warn"});
  INFO(cpu.err);
  REQUIRE(cpu.exit_code == 0);
  const std::vector<int32_t> reference = ids_line(cpu.out);
  REQUIRE(!reference.empty());

  std::vector<std::string> counts(arms.size());
  for (size_t i = 0; i < arms.size(); ++i) {
    CAPTURE(arms[i].name);
    std::vector<std::string> args = {"run", "--profile", write_profile(dir, arms[i], model, i + 1).string(), "--set",
                                     "device=hip"};
    if (!arms[i].arch_set.empty()) args.insert(args.end(), {"--set", arms[i].arch_set});
    const auto r = run_moepage(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("GPU forward pass") != std::string::npos);  // the arch really ran on the GPU
    CHECK(ids_line(r.out) == reference);
    counts[i] = pager_counts(r.err);
    CHECK(!counts[i].empty());
    CHECK((r.err.find("layer steps looked their experts up on the device") != std::string::npos) ==
          arms[i].slot_lookups);
    if (arms[i].twin.empty()) continue;
    size_t twin = 0;
    while (twin < i && arms[twin].name != arms[i].twin) ++twin;
    REQUIRE(twin < i);
    CHECK(counts[i] == counts[twin]);
  }
}
