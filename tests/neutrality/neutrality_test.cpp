// THE NEUTRALITY GATE: greedy token ids over 192 generated tokens of the committed tiny
// DeepSeek-V4 model are identical across every pager x transport x budget, through the public ABI
// only (registry + handles), with the arch plugin driving the pager as `moepage run` does.
// Arms: resident; lru with a large budget (most but not all experts); lru at the minimum budget
// (exactly top-k slots: every token thrashes) over pread, pinned-async and io-uring; paged with
// its slots split per layer by the committed held-out trace; adapter-prefetch with a random
// adapter over pinned-async, io-uring and mapped. (Eviction policies are compared with each other in
// tests/pager-core.) Each paged arm must actually have missed, so the gate cannot pass vacuously.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "neutrality_harness.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using moepage::test::OptionList;

constexpr uint32_t kTokens = 192;

struct Arm {
  std::string name;
  std::string pager;
  OptionList pager_options;
  uint32_t slots;  // budget buying this many slots per layer; 0: no budget option
  std::string transport;
  OptionList transport_options;
};

}  // namespace

TEST_CASE(
    "greedy ids are identical across resident, lru at every budget, a per-layer split, adapter-prefetch and every "
    "transport") {
  const fs::path model = moepage::test::source_path("models/ds4-debian-tiny");
  REQUIRE(fs::exists(model / "config.json"));
  moepage::test::Harness h;
  const mp_model_info info = h.describe(model);
  const uint32_t k = info.top_k;
  REQUIRE(info.n_experts > k + 2);

  // A random adapter is valid for the model, so prefetching by it must not change a token.
  const moepage::test::TempFile adapter_file("neutrality-adapter");
  const fs::path& adapter = adapter_file.path();
  moepage::test::write_random_adapter(info, adapter);

  const OptionList pread = {{"threads", "2"}};
  const OptionList pinned = {{"threads", "2"}, {"staging", "256KiB"}};
  // O_DIRECT where the model's file system takes it, in 4 KiB windows through three staging
  // buffers: every expert part spans windows and waits for a buffer.
  const OptionList uring_direct = {{"buffers", "3"}, {"buffer_size", "4KiB"}, {"queue_depth", "4"}};
  const OptionList uring_buffered = {{"direct", "off"}, {"queue_depth", "8"}};
  const std::vector<Arm> arms = {
      {"resident / pread", "resident", {}, 0, "pread", pread},
      {"lru large budget / pread", "lru", {}, info.n_experts * 3 / 4, "pread", pread},
      {"lru minimum budget (top-k slots) / pread", "lru", {}, k, "pread", pread},
      {"lru minimum budget / pinned-async", "lru", {}, k, "pinned-async", pinned},
      {"lru minimum budget / io-uring (direct: auto)", "lru", {}, k, "io-uring", uring_direct},
      {"paged split by a held-out trace (.xz) / pread",
       "paged",
       {{"split", "trace"},
        {"split_trace", moepage::test::source_path("tests/data/ds4-debian-tiny-heldout-head.trace.xz").string()}},
       k + 4,
       "pread",
       pread},
      {"adapter-prefetch / pinned-async",
       "adapter-prefetch",
       {{"adapter", adapter.string()}},
       k + 2,
       "pinned-async",
       pinned},
      {"adapter-prefetch / io-uring (direct: off)",
       "adapter-prefetch",
       {{"adapter", adapter.string()}},
       k + 2,
       "io-uring",
       uring_buffered},
      {"adapter-prefetch / mapped", "adapter-prefetch", {{"adapter", adapter.string()}}, k + 2, "mapped", {}},
  };
  const std::vector<int32_t> prompt = {1, 17, 300, 4000, 42};
  std::vector<int32_t> reference;
  for (const Arm& arm : arms) {
    CAPTURE(arm.name);
    const auto out =
        h.greedy(model, arm.pager, arm.pager_options, arm.slots, arm.transport, arm.transport_options, prompt, kTokens);
    REQUIRE(out.ids.size() == kTokens);
    std::printf("%-45s accesses %8llu  hit rate %5.1f%%  bytes read %10llu\n", arm.name.c_str(),
                (unsigned long long)out.stats.accesses,
                out.stats.accesses ? 100.0 * double(out.stats.hits) / double(out.stats.accesses) : 0.0,
                (unsigned long long)out.stats.bytes_read);
    if (reference.empty()) {
      reference = out.ids;
      std::printf("reference ids:");
      for (size_t i = 0; i < 24; ++i) std::printf(" %d", reference[i]);
      std::printf(" ...\n");
      continue;
    }
    CHECK(out.ids == reference);
    CHECK(out.stats.resident == 0);
    CHECK(out.stats.misses > 0);  // it really paged
  }
}
