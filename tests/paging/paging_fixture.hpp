// Shared pieces of the paging tests: the plugins loaded from the build through the host loader,
// a host API whose log lines the test can read, and a synthetic expert catalog over a generated
// file (every byte a hash of its offset, so a misplaced or stale range never matches by accident).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "host/host_api.hpp"
#include "host/registry.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "profile/option_validation.hpp"
#include "support/pattern_file.hpp"
#include "support/test_paths.hpp"

namespace moepage::test {

// A model-shaped catalog: layer 0 dense (no routed experts), the rest paged; each expert has two
// parts ("w1" 1000 bytes, "w2" 600 bytes) at 1 KiB-aligned places in one pattern file.
struct SyntheticCatalog {
  static constexpr uint32_t kParts = 2;
  static constexpr uint64_t kPartBytes[kParts] = {1000, 600};
  static constexpr uint64_t kPartOffset[kParts] = {0, 1024};
  static constexpr uint64_t kExpertBytes = 1664;  // 1024 + 600 rounded up to 64
  static constexpr uint64_t kFirstByte = 4096;

  uint32_t n_layers, n_experts, top_k;
  PatternFile file;
  std::string file_path;
  const char* files[1];
  const char* part_names[kParts] = {"w1", "w2"};
  std::vector<mp_expert_segment> segments;
  std::vector<uint8_t> has_experts, hash_routed;
  mp_expert_catalog catalog{};

  static uint64_t file_bytes(uint32_t layers, uint32_t experts) {
    return kFirstByte + uint64_t(layers) * experts * kParts * 1024;
  }

  SyntheticCatalog(uint32_t layers = 4, uint32_t experts = 8, uint32_t k = 2, bool sparse = false)
      : n_layers(layers),
        n_experts(experts),
        top_k(k),
        file(file_bytes(layers, experts), sparse),
        file_path(file.path().string()) {
    files[0] = file_path.c_str();
    has_experts.assign(n_layers, 1);
    has_experts[0] = 0;
    hash_routed.assign(n_layers, 0);
    segments.resize(size_t(n_layers) * n_experts * kParts);
    for (uint32_t l = 0; l < n_layers; ++l)
      for (uint32_t e = 0; e < n_experts; ++e)
        for (uint32_t p = 0; p < kParts; ++p)
          segments[(size_t(l) * n_experts + e) * kParts + p] =
              mp_expert_segment{sizeof(mp_expert_segment), 0, offset(l, e, p), kPartBytes[p]};
    catalog = mp_expert_catalog{sizeof(mp_expert_catalog),
                                n_layers,
                                n_experts,
                                kParts,
                                top_k,
                                kExpertBytes,
                                kPartOffset,
                                kPartBytes,
                                part_names,
                                1,
                                files,
                                segments.data(),
                                has_experts.data(),
                                hash_routed.data(),
                                16};
  }
  uint64_t offset(uint32_t layer, uint32_t expert, uint32_t part) const {
    return kFirstByte + ((uint64_t(layer) * n_experts + expert) * kParts + part) * 1024;
  }
  uint32_t paged_layers() const { return uint32_t(std::count(has_experts.begin(), has_experts.end(), 1)); }
  // The budget that buys exactly `slots` slots per layer.
  uint64_t budget_for(uint32_t slots) const { return uint64_t(slots) * paged_layers() * kExpertBytes; }
  // True when the slot holds every part of (layer, expert).
  bool slot_holds(const void* slot, uint32_t layer, uint32_t expert) const {
    const auto* p = static_cast<const uint8_t*>(slot);
    for (uint32_t part = 0; part < kParts; ++part)
      if (!matches_pattern(p + kPartOffset[part], kPartBytes[part], offset(layer, expert, part))) return false;
    return true;
  }
};

// A host API that forwards to the real one but keeps every log line for the test to read.
class CapturingHost {
 public:
  explicit CapturingHost(std::unique_ptr<host::DeviceService> device = host::make_cpu_device_service())
      : inner_(std::move(device)) {
    api_ = *inner_.get();
    api_.ctx = this;
    api_.log = [](void* ctx, int32_t level, const char* component, const char* message) {
      auto* self = static_cast<CapturingHost*>(ctx);
      std::lock_guard lock(self->mutex_);
      self->lines_.push_back(std::string(component) + ": " + message);
      const mp_host_api* in = self->inner_.get();
      in->log(in->ctx, level, component, message);
    };
    api_.now_ns = [](void* ctx) -> uint64_t {
      const mp_host_api* in = static_cast<CapturingHost*>(ctx)->inner_.get();
      return in->now_ns(in->ctx);
    };
  }
  const mp_host_api* get() const { return &api_; }
  bool logged(const std::string& needle) const {
    std::lock_guard lock(mutex_);
    return std::any_of(lines_.begin(), lines_.end(),
                       [&](const std::string& l) { return l.find(needle) != std::string::npos; });
  }

 private:
  host::HostApi inner_;
  mp_host_api api_{};
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

using OptionList = std::vector<std::pair<std::string, std::string>>;

// The paging plugins of this build, loaded by file through the registry.
class Plugins {
 public:
  explicit Plugins(const mp_host_api* host) : registry_(host), host_(host) {
    for (const char* lib :
         {"libmoepage-pager-paged.so", "libmoepage-pager-lru.so", "libmoepage-pager-resident.so",
          "libmoepage-pager-adapter-prefetch.so", "libmoepage-transport-pinned-async.so",
          "libmoepage-transport-fault-inject.so", "libmoepage-transport-pread.so", "libmoepage-transport-io-uring.so"})
      registry_.add_library(plugin_dir() / lib);
  }

  mp::TransportHandle transport(const std::string& name, OptionList options = {}) {
    const host::LoadedComponent& c = registry_.find(MP_KIND_TRANSPORT, name);
    return mp::TransportHandle::create(*c.descriptor, c.library, host_, resolve(c, options));
  }

  mp::PagerHandle pager(const std::string& name, OptionList options, const mp_expert_catalog& catalog,
                        mp::TransportHandle& transport, uint64_t dense_bytes = 0) {
    return pager(name, std::move(options), catalog, transport.ref(), dense_bytes);
  }
  // Over any transport instance (a test double made in process), which must outlive the pager.
  mp::PagerHandle pager(const std::string& name, OptionList options, const mp_expert_catalog& catalog,
                        const mp_transport_ref& transport, uint64_t dense_bytes = 0) {
    const host::LoadedComponent& c = registry_.find(MP_KIND_PAGER, name);
    mp_pager_create_args args{};
    args.struct_size = sizeof args;
    args.host = host_;
    args.options = resolve(c, options);
    args.catalog = &catalog;
    args.transport = transport;
    args.dense_bytes = dense_bytes;
    return mp::PagerHandle::create(*c.descriptor, c.library, args);
  }

 private:
  const mp_options* resolve(const host::LoadedComponent& c, OptionList& options) {
    const mp_component_descriptor& d = *c.descriptor;
    profile::ComponentSpec spec{d.kind == MP_KIND_PAGER ? "pager" : "transport", d.name, "test", {}};
    std::sort(options.begin(), options.end());
    for (auto& [name, value] : options) spec.options.push_back({name, value, "/", "test"});
    options_.push_back(profile::validate_options(spec, {d.options, d.n_options}));
    return options_.back().c_options();
  }

  host::Registry registry_;
  const mp_host_api* host_;
  std::deque<profile::ResolvedOptions> options_;  // deque: never moves while instances live
};

// The stack most paging tests run on: a capturing host over `device`, the paging plugins, the
// default synthetic catalog (4 layers, layer 0 dense, 8 experts, top-2) and one transport.
// Declared first, destroyed last: pagers a test creates from it go before it.
struct PagingBench {
  CapturingHost host;
  Plugins plugins{host.get()};
  SyntheticCatalog model;
  mp::TransportHandle transport;

  explicit PagingBench(const std::string& transport_name = "pread", const std::string& threads = "1",
                       std::unique_ptr<host::DeviceService> device = host::make_cpu_device_service())
      : host(std::move(device)), transport(plugins.transport(transport_name, {{"threads", threads}})) {}
  // A transport with options of its own (io-uring has no `threads`).
  PagingBench(const std::string& transport_name, OptionList transport_options)
      : transport(plugins.transport(transport_name, std::move(transport_options))) {}

  // Pager `name` with a budget that buys `slots` slots per layer, plus `options`.
  mp::PagerHandle pager_with_slots(uint32_t slots, const std::string& name = "lru", OptionList options = {}) {
    options.emplace_back("budget", std::to_string(model.budget_for(slots)));
    return plugins.pager(name, std::move(options), model.catalog, transport);
  }
  // The message creating pager `name` with `options` fails with ("created" when it does not fail).
  std::string pager_refusal(const std::string& name, OptionList options) {
    try {
      plugins.pager(name, std::move(options), model.catalog, transport);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "created";
  }
};

// Acquires and returns the slots, with the result struct.
struct Acquired {
  std::vector<void*> slots;
  mp_acquire_result result{};
};
inline Acquired acquire(mp::PagerHandle& pager, uint32_t layer, std::vector<int32_t> experts) {
  Acquired a;
  a.slots.assign(experts.size(), nullptr);
  a.result.struct_size = sizeof a.result;
  a.result.slots = a.slots.data();
  pager.acquire(layer, experts, &a.result);
  return a;
}

}  // namespace moepage::test
