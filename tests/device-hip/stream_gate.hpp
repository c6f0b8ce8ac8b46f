// A gate on a device stream: work queued after it waits until the host opens it. Lets the tests
// hold a stream busy for as long as they need, so "pending" and ordering checks are deterministic
// instead of racing a large copy.
#pragma once

#include <atomic>

#include "moepage/host_api.h"

namespace moepage::test {

class StreamGate {
 public:
  StreamGate() = default;
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  // The stream must be drained (the gate opened) before this object goes away.
  ~StreamGate() { open(); }

  // Queues the gate on `stream` (a native stream of the HIP device service); throws on failure.
  void close_on(mp_stream stream);
  void open() noexcept { open_.store(true, std::memory_order_release); }

 private:
  static void wait_until_open(void* self) noexcept;
  std::atomic<bool> open_{false};
};

// True when the runtime holds no error for this thread (hipPeekAtLastError), so a kernel-launch
// check after a failed service call would not report that stale failure.
bool runtime_error_clear() noexcept;

}  // namespace moepage::test
