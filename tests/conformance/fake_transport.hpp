// A small synchronous transport for testing the conformance suite itself: correct by default,
// with one deliberate fault selectable per instantiation, so each check is shown to catch the
// fault it exists for.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "moepage/cpp/plugin_adapter.hpp"

namespace conform_test {

enum class Fault {
  none,
  flips_a_byte,          // the last byte of every read is wrong
  writes_past_dst,       // one byte after the destination range is overwritten
  ignores_end_of_file,   // reads past the end "succeed" (zero-filled)
  not_available,         // create() answers MP_ERR_NOT_AVAILABLE
  forgets_stats,         // stats() reports nothing
};

template <Fault F>
class FakeTransport {
 public:
  FakeTransport(const mp_host_api*, const mp::Options&) {
    if constexpr (F == Fault::not_available) throw mp::Error(MP_ERR_NOT_AVAILABLE, "fake: not built yet");
  }
  ~FakeTransport() {
    for (const File& f : files_) ::close(f.fd);
  }
  mp_status open(const char* path, uint32_t* file) {
    std::lock_guard lock(mutex_);
    const int fd = ::open(path, O_RDONLY);
    if (fd < 0) throw mp::Error(MP_ERR_IO, std::string("fake: cannot open ") + path);
    files_.push_back(File{fd, path});
    *file = static_cast<uint32_t>(files_.size() - 1);
    return MP_OK;
  }
  mp_status submit(const mp_read_request* r, uint32_t n, mp_ticket* ticket) {
    std::lock_guard lock(mutex_);
    for (uint32_t i = 0; i < n; ++i) {
      if (r[i].file >= files_.size()) throw mp::Error(MP_ERR_INVALID_ARG, "fake: unknown file handle");
    }
    std::string error;
    for (uint32_t i = 0; i < n; ++i) {
      unsigned char* dst = static_cast<unsigned char*>(r[i].dst) + r[i].dst_offset;
      const File& f = files_[r[i].file];
      const ssize_t got = r[i].length == 0 ? 0 : ::pread(f.fd, dst, r[i].length, static_cast<off_t>(r[i].offset));
      ++requests_;
      bytes_ += got > 0 ? static_cast<uint64_t>(got) : 0;
      if (static_cast<uint64_t>(got < 0 ? 0 : got) < r[i].length) {
        if constexpr (F == Fault::ignores_end_of_file) {
          std::memset(dst + (got < 0 ? 0 : got), 0, r[i].length - static_cast<uint64_t>(got < 0 ? 0 : got));
        } else {
          ++errors_;
          if (error.empty()) error = "fake: " + f.path + ": short read at offset " + std::to_string(r[i].offset);
        }
      }
      if constexpr (F == Fault::flips_a_byte) {
        if (r[i].length > 0) dst[r[i].length - 1] ^= 0xFF;
      }
      if constexpr (F == Fault::writes_past_dst) dst[r[i].length] = 0;
    }
    *ticket = next_++;
    done_[*ticket] = error;
    return MP_OK;
  }
  mp_status wait(mp_ticket t) { return poll(t); }
  mp_status poll(mp_ticket t) {
    std::lock_guard lock(mutex_);
    auto it = done_.find(t);
    if (it == done_.end()) throw mp::Error(MP_ERR_INVALID_ARG, "fake: unknown ticket");
    const std::string error = it->second;
    done_.erase(it);
    if (!error.empty()) throw mp::Error(MP_ERR_IO, error);
    return MP_OK;
  }
  mp_status stats(mp_transport_stats* out) {
    if constexpr (F == Fault::forgets_stats) return MP_OK;
    std::lock_guard lock(mutex_);
    // Writes only what the caller's struct_size covers.
    mp_transport_stats s{};
    s.requests = requests_;
    s.bytes_read = bytes_;
    s.errors = errors_;
    const size_t size = std::min<size_t>(out->struct_size, sizeof s);
    std::memcpy(reinterpret_cast<char*>(out) + sizeof(uint32_t), reinterpret_cast<const char*>(&s) + sizeof(uint32_t),
                size - sizeof(uint32_t));
    return MP_OK;
  }

 private:
  struct File {
    int fd;
    std::string path;
  };
  std::mutex mutex_;
  std::vector<File> files_;
  std::map<mp_ticket, std::string> done_;
  mp_ticket next_ = 1;
  uint64_t requests_ = 0, bytes_ = 0, errors_ = 0;
};

inline constexpr mp_option_def kFakeOptions[] = {
    mp::option(MP_OPT_INT, "threads", "1", "ignored"),
    mp::option(MP_OPT_SIZE, "chunk", "4KiB", "ignored"),
};

template <Fault F>
const mp_component_descriptor& fake_transport_descriptor() {
  static const mp_component_descriptor d =
      mp::make_transport_descriptor<FakeTransport<F>>("fake", "0", "test double", MP_CAP_CPU, kFakeOptions);
  return d;
}

}  // namespace conform_test
