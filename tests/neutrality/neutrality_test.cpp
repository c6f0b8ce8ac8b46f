// THE NEUTRALITY GATE: greedy token ids over 192 generated tokens of the committed tiny
// DeepSeek-V4 model are identical across every pager x transport x budget, through the public ABI
// only (registry + handles), with the arch plugin driving the pager as `moepage run` does.
// Arms: resident; lru with a large budget (most but not all experts); lru at the minimum budget
// (exactly top-k slots: every token thrashes); lru/lfru over pinned-async; adapter-prefetch with a
// random adapter. Each paged arm must actually have missed, so the gate cannot pass vacuously.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "host/host_api.hpp"
#include "host/plugin_stack.hpp"
#include "host/registry.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "moepage/pager_core/adapter_file.hpp"
#include "profile/option_validation.hpp"

namespace {

namespace fs = std::filesystem;
using OptionList = std::vector<std::pair<std::string, std::string>>;

constexpr uint32_t kTokens = 192;
const fs::path kModel = fs::path(MOEPAGE_SOURCE_DIR) / "models" / "ds4-debian-tiny";

struct Arm {
  std::string name;
  std::string pager;
  OptionList pager_options;  // "SLOTS" in budget is replaced by the budget buying that many slots
  uint32_t slots;            // 0: no budget option
  std::string transport;
  OptionList transport_options;
};

class Harness {
 public:
  Harness() : registry_(host_.get()) { registry_.scan_directory(MOEPAGE_PLUGIN_BUILD_DIR); }

  const mp_options* resolve(const moepage::host::LoadedComponent& c, OptionList options) {
    const mp_component_descriptor& d = *c.descriptor;
    const char* section = d.kind == MP_KIND_PAGER ? "pager" : d.kind == MP_KIND_ARCH ? "arch" : "transport";
    moepage::profile::ComponentSpec spec{section, d.name, "neutrality", {}};
    std::sort(options.begin(), options.end());
    for (auto& [name, value] : options) spec.options.push_back({name, value, "/", "neutrality"});
    options_.push_back(moepage::profile::validate_options(spec, {d.options, d.n_options}));
    return options_.back().c_options();
  }

  struct Outcome {
    std::vector<int32_t> ids;
    mp_pager_stats stats{};
  };

  Outcome run(const Arm& arm, const std::vector<int32_t>& prompt) {
    moepage::host::PluginStack stack;
    const auto& arch = registry_.find(MP_KIND_ARCH, "deepseek4");
    const std::string dir = kModel.string();
    const mp_arch_create_args arch_args{sizeof(mp_arch_create_args), host_.get(),
                                        resolve(arch, {{"threads", "2"}}), dir.c_str()};
    stack.arch = mp::ArchHandle::create(*arch.descriptor, arch.library, arch_args);
    const mp_model_info info = stack.arch.describe();
    const mp_expert_catalog* catalog = stack.arch.expert_catalog();
    REQUIRE(catalog != nullptr);

    const auto& transport = registry_.find(MP_KIND_TRANSPORT, arm.transport);
    stack.transport = mp::TransportHandle::create(*transport.descriptor, transport.library, host_.get(),
                                                  resolve(transport, arm.transport_options));
    OptionList pager_options = arm.pager_options;
    if (arm.slots > 0) {
      uint64_t paged_layers = 0;
      for (uint32_t l = 0; l < catalog->n_layers; ++l) paged_layers += catalog->has_experts[l] ? 1 : 0;
      pager_options.push_back({"budget", std::to_string(uint64_t(arm.slots) * paged_layers * catalog->expert_bytes)});
    }
    const auto& pager = registry_.find(MP_KIND_PAGER, arm.pager);
    const mp_pager_create_args pager_args{sizeof(mp_pager_create_args), host_.get(), resolve(pager, pager_options),
                                          catalog, stack.transport.ref(), info.dense_bytes};
    stack.pager = mp::PagerHandle::create(*pager.descriptor, pager.library, pager_args);
    stack.arch.bind_pager(stack.pager.ref());

    // Greedy decoding: the prompt as one prefill, then one token per forward.
    Outcome out;
    std::vector<float> logits(info.vocab_size);
    stack.arch.reset_sequence();
    stack.arch.forward(prompt, logits.data(), MP_FORWARD_LAST_LOGITS);
    for (uint32_t step = 0; step < kTokens; ++step) {
      const int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
      out.ids.push_back(next);
      if (step + 1 < kTokens) stack.arch.forward({&out.ids.back(), 1}, logits.data(), MP_FORWARD_LAST_LOGITS);
    }
    out.stats = stack.pager.stats();
    stack.shutdown();
    return out;
  }

  uint32_t top_k() {
    const auto& arch = registry_.find(MP_KIND_ARCH, "deepseek4");
    const std::string dir = kModel.string();
    const mp_arch_create_args args{sizeof(mp_arch_create_args), host_.get(), resolve(arch, {{"threads", "1"}}),
                                   dir.c_str()};
    auto handle = mp::ArchHandle::create(*arch.descriptor, arch.library, args);
    const mp_model_info info = handle.describe();
    n_experts_ = info.n_experts;
    n_layers_ = info.n_layers;
    d_model_ = info.d_model;
    return info.top_k;
  }
  uint32_t n_experts_ = 0, n_layers_ = 0, d_model_ = 0;

 private:
  moepage::host::HostApi host_;
  moepage::host::Registry registry_;
  std::deque<moepage::profile::ResolvedOptions> options_;
};

}  // namespace

TEST_CASE("greedy ids are identical across resident, lru at every budget, adapter-prefetch and every transport") {
  REQUIRE(fs::exists(kModel / "config.json"));
  Harness h;
  const uint32_t k = h.top_k();
  REQUIRE(h.n_experts_ > k + 2);

  // A random adapter is valid for the model, so prefetching by it must not change a token.
  moepage::pager::AdapterModel m{h.n_layers_, h.d_model_, h.n_experts_, std::vector<uint8_t>(h.n_layers_, 1)};
  const fs::path adapter = fs::temp_directory_path() / ("moepage-neutrality-" + std::to_string(::getpid()) + ".hfadpt");
  moepage::pager::write_adapter_file(adapter.string(), moepage::pager::random_adapter(m, 8, 42));

  const OptionList pread = {{"threads", "2"}};
  const OptionList pinned = {{"threads", "2"}, {"staging", "256KiB"}};
  const std::vector<Arm> arms = {
      {"resident / pread", "resident", {}, 0, "pread", pread},
      {"lru large budget / pread", "lru", {}, h.n_experts_ * 3 / 4, "pread", pread},
      {"lru minimum budget (top-k slots) / pread", "lru", {}, k, "pread", pread},
      {"lru minimum budget / pinned-async", "lru", {}, k, "pinned-async", pinned},
      {"lfru large budget / pinned-async", "lru", {{"policy", "lfru"}}, h.n_experts_ / 2, "pinned-async", pinned},
      {"adapter-prefetch / pinned-async", "adapter-prefetch", {{"adapter", adapter.string()}}, k + 2, "pinned-async",
       pinned},
  };
  const std::vector<int32_t> prompt = {1, 17, 300, 4000, 42};
  std::vector<int32_t> reference;
  for (const Arm& arm : arms) {
    CAPTURE(arm.name);
    const Harness::Outcome out = h.run(arm, prompt);
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
  fs::remove(adapter);
}
