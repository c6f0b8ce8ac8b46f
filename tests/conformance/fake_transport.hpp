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
  flips_a_byte,         // the last byte of every read is wrong
  writes_past_dst,      // one byte after the destination range is overwritten
  ignores_end_of_file,  // reads past the end "succeed" (zero-filled)
  not_available,        // create() answers MP_ERR_NOT_AVAILABLE
  forgets_stats,        // stats() reports nothing
  ignores_stride,       // walks requests with its own sizeof, not the caller's struct_size
  names_no_request,     // a failed ticket does not say which request failed
  reports_twice,        // a reported ticket is not retired: a second waiter gets its result too
  zero_means_full,      // stats take struct_size 0 to mean the full struct, and write it
  pageable_copy,        // device destinations are copied from ordinary (pageable) memory
  unsynchronised_copy,  // device copies are issued but wait() returns without synchronising
};

template <Fault F>
class FakeTransport {
 public:
  FakeTransport(const mp_host_api* host, const mp::Options&) : dev_(host != nullptr ? host->device : nullptr) {
    if constexpr (F == Fault::not_available) throw mp::Error(MP_ERR_NOT_AVAILABLE, "fake: not built yet");
  }
  ~FakeTransport() {
    for (const File& f : files_) ::close(f.fd);
    if (pinned_ != nullptr) dev_->free_pinned(dev_->ctx, pinned_);
    if (stream_ != nullptr) dev_->stream_destroy(dev_->ctx, stream_);
  }
  mp_status open(const char* path, uint32_t* file) {
    std::lock_guard lock(mutex_);
    const int fd = ::open(path, O_RDONLY);
    if (fd < 0) throw mp::Error(MP_ERR_IO, std::string("fake: cannot open ") + path);
    files_.push_back(File{fd, path});
    *file = static_cast<uint32_t>(files_.size() - 1);
    return MP_OK;
  }
  mp_status submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket) {
    std::vector<mp_read_request> r;
    if constexpr (F == Fault::ignores_stride) r.assign(requests, requests + n);
    else r = mp::VersionedArray<mp_read_request>(requests, n, "fake: submit").to_vector();
    std::lock_guard lock(mutex_);
    for (uint32_t i = 0; i < n; ++i) {
      if (r[i].file >= files_.size()) throw mp::Error(MP_ERR_INVALID_ARG, "fake: unknown file handle");
    }
    Outcome outcome;
    for (uint32_t i = 0; i < n; ++i) {
      ++requests_;
      if (r[i].length == 0) continue;
      const std::string error = read_one(r[i]);
      if (error.empty()) continue;
      ++errors_;
      if (outcome.error.empty()) {
        outcome.error = error;
        outcome.failed_request = i;
        outcome.failed_tag = r[i].tag;
      }
      ++outcome.failed_count;
    }
    *ticket = next_++;
    done_[*ticket] = outcome;
    return MP_OK;
  }
  mp_status wait(mp_ticket t, mp_ticket_result* result) { return poll(t, result); }
  mp_status poll(mp_ticket t, mp_ticket_result* result) {
    std::lock_guard lock(mutex_);
    auto it = done_.find(t);
    if (it == done_.end()) throw mp::Error(MP_ERR_INVALID_ARG, "fake: unknown ticket");
    const Outcome outcome = it->second;
    if constexpr (F != Fault::reports_twice) done_.erase(it);
    if constexpr (F != Fault::names_no_request) {
      if (!outcome.error.empty()) {
        result->failed_request = outcome.failed_request;
        result->failed_tag = outcome.failed_tag;
        result->failed_count = outcome.failed_count;
      }
    }
    if (!outcome.error.empty()) throw mp::Error(MP_ERR_IO, outcome.error);
    return MP_OK;
  }
  mp_status stats(mp_transport_stats* out) {
    if constexpr (F == Fault::forgets_stats) return MP_OK;
    std::lock_guard lock(mutex_);
    mp_transport_stats s{};
    s.struct_size = sizeof s;
    s.requests = requests_;
    s.bytes_read = bytes_;
    s.errors = errors_;
    if constexpr (F == Fault::zero_means_full) {
      if (out->struct_size == 0) {
        *out = s;
        return MP_OK;
      }
    }
    mp::write_out(out, s, "fake: stats");
    return MP_OK;
  }

 private:
  struct File {
    int fd;
    std::string path;
  };
  struct Outcome {
    std::string error;
    uint32_t failed_request = MP_NO_REQUEST;
    uint64_t failed_tag = 0;
    uint32_t failed_count = 0;
  };

  // Reads one request (mutex_ held); "" or the error message.
  std::string read_one(const mp_read_request& r) {
    const bool to_device = r.dst_kind == MP_MEM_DEVICE;
    unsigned char* dst = static_cast<unsigned char*>(r.dst) + r.dst_offset;
    unsigned char* into = to_device ? staging(r.length) : dst;
    const File& f = files_[r.file];
    const ssize_t got = ::pread(f.fd, into, r.length, static_cast<off_t>(r.offset));
    const uint64_t read = got > 0 ? static_cast<uint64_t>(got) : 0;
    bytes_ += read;
    if (read < r.length) {
      if constexpr (F != Fault::ignores_end_of_file)
        return "fake: " + f.path + ": short read at offset " + std::to_string(r.offset);
      std::memset(into + read, 0, r.length - read);
    }
    if constexpr (F == Fault::flips_a_byte) into[r.length - 1] ^= 0xFF;
    if constexpr (F == Fault::writes_past_dst) dst[r.length] = 0;
    if (to_device) copy_to_device(dst, into, r.length);
    return "";
  }
  unsigned char* staging(uint64_t bytes) {
    if constexpr (F == Fault::pageable_copy) {
      pageable_.resize(bytes);
      return pageable_.data();
    }
    if (pinned_bytes_ < bytes) {
      if (pinned_ != nullptr) dev_->free_pinned(dev_->ctx, pinned_);
      pinned_ = nullptr;
      if (dev_->alloc_pinned(dev_->ctx, bytes, &pinned_) != MP_OK)
        throw mp::Error(MP_ERR_OOM, "fake: no pinned memory");
      pinned_bytes_ = bytes;
    }
    return static_cast<unsigned char*>(pinned_);
  }
  void copy_to_device(unsigned char* dst, const unsigned char* src, uint64_t bytes) {
    if (stream_ == nullptr && dev_->stream_create(dev_->ctx, &stream_) != MP_OK)
      throw mp::Error(MP_ERR_DEVICE, "fake: no stream");
    if (dev_->copy_to_device_async(dev_->ctx, dst, src, bytes, stream_) != MP_OK)
      throw mp::Error(MP_ERR_DEVICE, "fake: copy");
    if constexpr (F != Fault::unsynchronised_copy) dev_->stream_synchronize(dev_->ctx, stream_);
  }

  const mp_device_service* dev_;
  std::mutex mutex_;
  std::vector<File> files_;
  std::map<mp_ticket, Outcome> done_;
  mp_ticket next_ = 1;
  uint64_t requests_ = 0, bytes_ = 0, errors_ = 0;
  void* pinned_ = nullptr;
  uint64_t pinned_bytes_ = 0;
  std::vector<unsigned char> pageable_;
  mp_stream stream_ = nullptr;
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
