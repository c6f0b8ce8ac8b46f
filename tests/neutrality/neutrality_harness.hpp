// Builds arch -> transport -> pager through the public ABI (registry + handles), as `moepage run`
// does, for the neutrality gate and the paged-load test.
#pragma once
#include <algorithm>
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
#include "support/test_paths.hpp"

namespace moepage::test {

using OptionList = std::vector<std::pair<std::string, std::string>>;

// A random adapter (rank 8, seed 42) that fits the model `info` describes, written to `path`: a
// valid predictor whose prefetches must not change a token.
inline void write_random_adapter(const mp_model_info& info, const std::filesystem::path& path) {
  pager::AdapterModel m{info.n_layers, info.d_model, info.n_experts, std::vector<uint8_t>(info.n_layers, 1)};
  pager::write_adapter_file(path.string(), pager::random_adapter(m, 8, 42));
}

class Harness {
 public:
  Harness() : registry_(host_.get()) { registry_.scan_directory(moepage::test::plugin_dir()); }

  struct Loaded {
    mp_model_info info{};
    mp_pager_stats pager_stats{};
    uint64_t transport_bytes_read = 0;
  };

  void synthesize(const mp_synth_request& req) {
    const auto& arch = registry_.find(MP_KIND_ARCH, "deepseek4");
    mp::ArchHandle::synthesize(*arch.descriptor, host_.get(), req);
  }

  // Creates the stack for `dir`; `slots` > 0 adds a budget option buying that many slots per layer.
  void build(host::PluginStack& stack, const std::filesystem::path& dir, const std::string& pager,
             OptionList pager_options, uint32_t slots, const std::string& transport,
             const OptionList& transport_options) {
    const auto& arch = registry_.find(MP_KIND_ARCH, "deepseek4");
    const std::string dir_text = dir.string();
    const mp_arch_create_args arch_args{sizeof(mp_arch_create_args), host_.get(), resolve(arch, {{"threads", "2"}}),
                                        dir_text.c_str()};
    stack.arch = mp::ArchHandle::create(*arch.descriptor, arch.library, arch_args);
    info_ = stack.arch.describe();
    const mp_expert_catalog* catalog = stack.arch.expert_catalog();
    const auto& t = registry_.find(MP_KIND_TRANSPORT, transport);
    stack.transport = mp::TransportHandle::create(*t.descriptor, t.library, host_.get(), resolve(t, transport_options));
    if (slots > 0) pager_options.push_back({"budget", std::to_string(budget_for(*catalog, slots))});
    const auto& p = registry_.find(MP_KIND_PAGER, pager);
    const mp_pager_create_args pager_args{sizeof(mp_pager_create_args), host_.get(),
                                          resolve(p, pager_options),    catalog,
                                          stack.transport.ref(),        info_.dense_bytes};
    stack.pager = mp::PagerHandle::create(*p.descriptor, p.library, pager_args);
    stack.arch.bind_pager(stack.pager.ref());
  }

  Loaded load(const std::filesystem::path& dir, const std::string& pager, OptionList pager_options, uint32_t slots,
              const std::string& transport, const OptionList& transport_options) {
    host::PluginStack stack;
    build(stack, dir, pager, std::move(pager_options), slots, transport, transport_options);
    return Loaded{info_, stack.pager.stats(), stack.transport.stats().bytes_read};
  }

  struct Outcome {
    std::vector<int32_t> ids;
    mp_pager_stats stats{};
  };

  // Greedy decoding: the prompt as one prefill, then one token per forward.
  Outcome greedy(const std::filesystem::path& dir, const std::string& pager, OptionList pager_options, uint32_t slots,
                 const std::string& transport, const OptionList& transport_options, const std::vector<int32_t>& prompt,
                 uint32_t tokens) {
    host::PluginStack stack;
    build(stack, dir, pager, std::move(pager_options), slots, transport, transport_options);
    Outcome out;
    std::vector<float> logits(info_.vocab_size);
    stack.arch.reset_sequence();
    stack.arch.forward(prompt, logits.data(), MP_FORWARD_LAST_LOGITS);
    for (uint32_t step = 0; step < tokens; ++step) {
      const int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
      out.ids.push_back(next);
      if (step + 1 < tokens) stack.arch.forward({&out.ids.back(), 1}, logits.data(), MP_FORWARD_LAST_LOGITS);
    }
    out.stats = stack.pager.stats();
    stack.shutdown();
    return out;
  }

  // Bytes of a pager budget that buys `slots` slots in every layer with routed experts.
  static uint64_t budget_for(const mp_expert_catalog& catalog, uint32_t slots) {
    uint64_t paged_layers = 0;
    for (uint32_t l = 0; l < catalog.n_layers; ++l) paged_layers += catalog.has_experts[l] ? 1 : 0;
    return uint64_t(slots) * paged_layers * catalog.expert_bytes;
  }

  uint64_t budget_for(const std::filesystem::path& dir, uint32_t slots) {
    const auto& arch = registry_.find(MP_KIND_ARCH, "deepseek4");
    const std::string dir_text = dir.string();
    const mp_arch_create_args args{sizeof(mp_arch_create_args), host_.get(), resolve(arch, {{"threads", "1"}}),
                                   dir_text.c_str()};
    auto handle = mp::ArchHandle::create(*arch.descriptor, arch.library, args);
    return budget_for(*handle.expert_catalog(), slots);
  }

  mp_model_info describe(const std::filesystem::path& dir) {
    const auto& arch = registry_.find(MP_KIND_ARCH, "deepseek4");
    const std::string dir_text = dir.string();
    const mp_arch_create_args args{sizeof(mp_arch_create_args), host_.get(), resolve(arch, {{"threads", "1"}}),
                                   dir_text.c_str()};
    return mp::ArchHandle::create(*arch.descriptor, arch.library, args).describe();
  }

 private:
  const mp_options* resolve(const host::LoadedComponent& c, OptionList options) {
    const mp_component_descriptor& d = *c.descriptor;
    const char* section = d.kind == MP_KIND_PAGER ? "pager" : d.kind == MP_KIND_ARCH ? "arch" : "transport";
    profile::ComponentSpec spec{section, d.name, "neutrality", {}};
    std::sort(options.begin(), options.end());
    for (auto& [name, value] : options) spec.options.push_back({name, value, "/", "neutrality"});
    options_.push_back(profile::validate_options(spec, {d.options, d.n_options}));
    return options_.back().c_options();
  }

  host::HostApi host_;
  host::Registry registry_;
  std::deque<profile::ResolvedOptions> options_;  // deque: never moves while instances live
  mp_model_info info_{};
};

}  // namespace moepage::test
