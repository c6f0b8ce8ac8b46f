// Shared pieces of the io-uring suite: a host whose log lines the test can read, the engine
// (transports/io-uring) driven directly, requests, outcomes, and a probe of whether a folder's
// file system really does O_DIRECT.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "host/host_api.hpp"
#include "support/pattern_file.hpp"
#include "uring_transport.hpp"

namespace moepage::test {

// Forwards to a real host API (CPU device) and keeps every log line.
class LogHost {
 public:
  LogHost() {
    api_ = *inner_.get();
    api_.ctx = this;
    api_.log = [](void* ctx, int32_t, const char* component, const char* message) {
      auto* self = static_cast<LogHost*>(ctx);
      std::lock_guard lock(self->mutex_);
      self->lines_.push_back(std::string(component) + ": " + message);
    };
    api_.now_ns = [](void* ctx) -> uint64_t {
      const mp_host_api* in = static_cast<LogHost*>(ctx)->inner_.get();
      return in->now_ns(in->ctx);
    };
  }
  const mp_host_api* get() const { return &api_; }
  // Lines holding `needle`.
  size_t count(const std::string& needle) const {
    std::lock_guard lock(mutex_);
    return size_t(std::count_if(lines_.begin(), lines_.end(),
                                [&](const std::string& l) { return l.find(needle) != std::string::npos; }));
  }

 private:
  host::HostApi inner_;
  mp_host_api api_{};
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

inline mp_read_request request(uint32_t file, uint64_t offset, uint64_t length, void* dst, uint64_t dst_offset = 0,
                               uint64_t tag = 0, int32_t kind = MP_MEM_HOST, int32_t priority = MP_READ_DEMAND) {
  return mp_read_request{sizeof(mp_read_request), file, offset, length, dst, dst_offset, kind, priority, tag};
}

// What wait() said about a ticket.
struct Outcome {
  mp_status status = MP_OK;
  std::string message;
  mp_ticket_result result{};
};

inline mp_ticket submit(uring::UringTransport& t, const std::vector<mp_read_request>& requests) {
  mp_ticket ticket = 0;
  t.submit(requests.data(), uint32_t(requests.size()), &ticket);
  return ticket;
}

inline Outcome wait_for(uring::UringTransport& t, mp_ticket ticket) {
  Outcome o;
  o.result = mp_ticket_result{sizeof(mp_ticket_result), MP_NO_REQUEST, 0, 0, 0};
  try {
    t.wait(ticket, &o.result);
  } catch (const mp::Error& e) {
    o.status = e.status();
    o.message = e.what();
  }
  return o;
}

inline mp_transport_stats stats_of(uring::UringTransport& t) {
  mp_transport_stats s{};
  s.struct_size = sizeof s;
  t.stats(&s);
  return s;
}

inline uring::UringConfig config(uint32_t depth, uint32_t buffers, uint64_t buffer_size,
                                 uring::Mode direct = uring::Mode::kAuto) {
  uring::UringConfig c;
  c.queue_depth = depth;
  c.buffers = buffers;
  c.buffer_size = buffer_size;
  c.direct = direct;
  return c;
}

// Whether files in `dir` take O_DIRECT for real: the open succeeds and the kernel reports a
// direct-I/O alignment (tmpfs on kernels from 6.6 takes the flag but reports none, and copies
// through its page cache anyway).
struct DirectProbe {
  bool real = false;
  uint64_t alignment = 0;
  std::string note;  // what the test prints about it
};
inline DirectProbe probe_direct_io(const std::filesystem::path& file) {
  DirectProbe p;
  const int fd = ::open(file.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) {
    p.note = file.parent_path().string() + " refuses O_DIRECT";
    return p;
  }
  struct statx sx {};
  const bool told = ::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) != 0 &&
                    sx.stx_dio_offset_align != 0;
  ::close(fd);
  p.real = told;
  p.alignment = told ? sx.stx_dio_offset_align : 0;
  p.note = told ? file.parent_path().string() + " does O_DIRECT, reads aligned to " + std::to_string(p.alignment) +
                      " bytes (statx)"
                : file.parent_path().string() + " takes O_DIRECT but reports no alignment (tmpfs-like)";
  return p;
}

}  // namespace moepage::test
