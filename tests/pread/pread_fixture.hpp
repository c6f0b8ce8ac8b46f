// Loads the built pread plugin through the host loader and writes generated files to read.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/host_api.hpp"
#include "host/plugin_loader.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "profile/option_validation.hpp"
#include "support/pattern_file.hpp"
#include "support/test_paths.hpp"

namespace moepage::test {

// The pread component of the built plugin library.
class PreadPlugin {
 public:
  PreadPlugin() : loaded_(host::load_plugin(library_path(), host_.get())) {
    for (const host::LoadedComponent& c : loaded_.components) {
      if (c.kind() == MP_KIND_TRANSPORT && c.name() == "pread") component_ = &c;
    }
    if (component_ == nullptr) throw std::runtime_error("no pread transport in " + library_path().string());
  }

  static std::filesystem::path library_path() { return plugin_dir() / "libmoepage-transport-pread.so"; }

  // An instance with the given options ({"threads", "2"}, ...) validated like a profile's.
  mp::TransportHandle create(std::vector<std::pair<std::string, std::string>> options,
                             const mp_host_api* host = nullptr) {
    profile::ComponentSpec spec{"transport", "pread", "test", {}};
    for (auto& [name, value] : options) spec.options.push_back({name, value, "/", "test"});
    const mp_component_descriptor& d = *component_->descriptor;
    options_.push_back(profile::validate_options(spec, {d.options, d.n_options}));
    return mp::TransportHandle::create(d, component_->library, host ? host : host_.get(), options_.back().c_options());
  }

  const mp_host_api* host() const { return host_.get(); }
  const mp_component_descriptor& descriptor() const { return *component_->descriptor; }

 private:
  host::HostApi host_;
  host::LoadResult loaded_;
  const host::LoadedComponent* component_ = nullptr;
  std::deque<profile::ResolvedOptions> options_;  // deque: elements never move while instances live
};

// A pread transport with `options` over a fresh pattern file of `size` bytes, which it has opened.
// `host` (when given) must outlive it.
struct PreadOnFile {
  PatternFile file;
  PreadPlugin plugin;
  mp::TransportHandle transport;
  uint32_t handle;

  PreadOnFile(uint64_t size, std::vector<std::pair<std::string, std::string>> options,
              const mp_host_api* host = nullptr)
      : file(size), transport(plugin.create(std::move(options), host)), handle(transport.open(file.path().string())) {}
};

inline mp_read_request read_request(uint32_t file, uint64_t offset, uint64_t length, void* dst, uint64_t dst_offset,
                                    int32_t priority = MP_READ_DEMAND, int32_t kind = MP_MEM_HOST, uint64_t tag = 0) {
  return mp_read_request{sizeof(mp_read_request), file, offset, length, dst, dst_offset, kind, priority, tag};
}

}  // namespace moepage::test
