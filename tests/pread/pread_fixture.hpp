// Loads the built pread plugin through the host loader and writes generated files to read.
#pragma once
#include <unistd.h>

#include <atomic>
#include <deque>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/host_api.hpp"
#include "host/plugin_loader.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "profile/option_validation.hpp"

namespace moepage::test {

// Byte i of every generated file: a hash of i, so a misplaced range never matches by accident.
inline uint8_t pattern_byte(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint8_t>(z ^ (z >> 31));
}

// True when p[0, n) holds the generated file's bytes starting at file offset `from`.
inline bool matches_pattern(const uint8_t* p, uint64_t n, uint64_t from) {
  for (uint64_t i = 0; i < n; ++i) {
    if (p[i] != pattern_byte(from + i)) return false;
  }
  return true;
}

class PatternFile {
 public:
  explicit PatternFile(uint64_t size) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("moepage-pread-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".bin");
    std::vector<char> bytes(size);
    for (uint64_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(pattern_byte(i));
    std::ofstream(path_, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(size));
  }
  ~PatternFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  PatternFile(const PatternFile&) = delete;
  PatternFile& operator=(const PatternFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The pread component of the built plugin library.
class PreadPlugin {
 public:
  PreadPlugin() : loaded_(host::load_plugin(library_path(), host_.get())) {
    for (const host::LoadedComponent& c : loaded_.components) {
      if (c.kind() == MP_KIND_TRANSPORT && c.name() == "pread") component_ = &c;
    }
    if (component_ == nullptr) throw std::runtime_error("no pread transport in " + library_path().string());
  }

  static std::filesystem::path library_path() {
    return std::filesystem::path(MOEPAGE_PLUGIN_BUILD_DIR) / "libmoepage-transport-pread.so";
  }

  // An instance with the given options ({"threads", "2"}, ...) validated like a profile's.
  mp::TransportHandle create(std::vector<std::pair<std::string, std::string>> options,
                             const mp_host_api* host = nullptr) {
    profile::ComponentSpec spec{"transport", "pread", "test", {}};
    for (auto& [name, value] : options) spec.options.push_back({name, value, "/", "test"});
    const mp_component_descriptor& d = *component_->descriptor;
    options_.push_back(profile::validate_options(spec, {d.options, d.n_options}));
    return mp::TransportHandle::create(d, component_->library, host ? host : host_.get(),
                                       options_.back().c_options());
  }

  const mp_host_api* host() const { return host_.get(); }
  const mp_component_descriptor& descriptor() const { return *component_->descriptor; }

 private:
  host::HostApi host_;
  host::LoadResult loaded_;
  const host::LoadedComponent* component_ = nullptr;
  std::deque<profile::ResolvedOptions> options_;  // deque: elements never move while instances live
};

inline mp_read_request read_request(uint32_t file, uint64_t offset, uint64_t length, void* dst, uint64_t dst_offset,
                                    int32_t priority = MP_READ_DEMAND, int32_t kind = MP_MEM_HOST, uint64_t tag = 0) {
  return mp_read_request{sizeof(mp_read_request), file, offset, length, dst, dst_offset, kind, priority, tag};
}

}  // namespace moepage::test
