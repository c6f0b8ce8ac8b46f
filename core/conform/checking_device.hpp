// A device service for conformance checks, wrapped around the host's. It forwards every call and
// watches two rules of the device path (transport.h):
//  - the source of every copy_to_device_async lies in memory from alloc_pinned or registered
//    with register_host (a pageable source silently turns the copy synchronous on a GPU);
//  - on the CPU device, an async copy runs only when its stream is synchronised (or an event
//    recorded on it after the copy is synchronised or queried), as on a GPU. A transport whose
//    wait() returns before synchronising leaves the destination unwritten, which the byte check
//    then catches; the real CPU device would have copied at submission and hidden the bug.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "moepage/moepage.h"

namespace moepage::conform {

class CheckingDevice {
 public:
  // Wraps `host`'s device service; host() hands out a copy of `host` that points at the wrapper.
  explicit CheckingDevice(const mp_host_api* host);
  ~CheckingDevice();
  CheckingDevice(const CheckingDevice&) = delete;
  CheckingDevice& operator=(const CheckingDevice&) = delete;

  const mp_host_api* host() const noexcept { return &host_; }
  // Copies whose source was neither pinned nor registered memory from this service, one line each.
  std::vector<std::string> unpinned_copies() const;

 private:
  struct Copy {
    void* dst;
    const void* src;
    uint64_t bytes;
  };
  static CheckingDevice& of(void* ctx) { return *static_cast<CheckingDevice*>(ctx); }
  bool is_pinned(const void* src, uint64_t bytes) const;  // mutex_ held
  mp_status run_queued(mp_stream stream);                 // the CPU device only
  mp_status flush_event(mp_event event);                  // runs the copies before the event
  void flush_all();
  void install();
  void watch_pinned();  // install(): alloc_pinned, free_pinned, register_host, unregister_host, free_device
  void watch_copies();  // install(): copies, streams and events

  const mp_device_service* inner_;
  bool defer_copies_;  // the inner device is the CPU device
  mp_device_service table_{};
  mp_host_api host_{};
  mutable std::mutex mutex_;
  std::map<const char*, uint64_t> pinned_;         // start -> bytes (pinned or registered)
  std::map<mp_stream, std::vector<Copy>> queued_;  // per stream, in order
  std::map<mp_event, mp_stream> recorded_on_;      // the stream an event was last recorded on
  std::vector<std::string> unpinned_;
};

}  // namespace moepage::conform
