// A deadline kept by a thread of its own, for a caller that waits inside calls it cannot bound
// (a pager's acquire, a driver's synchronize): the caller arms it, and if the deadline passes
// before the caller disarms it, the watch runs on_expiry once, on its own thread. The GPU decode's
// slot lookups use it to let a stalled device go when the host's reply takes too long
// (hip/slot_table.hpp), so a process fails in a bounded time instead of waiting on a device that
// waits on it.
//
// The thread is made with the watch (at load) and sleeps until armed. Moving an armed deadline
// later is a store (no wake-up); arming from rest wakes the thread once. Nothing is allocated after
// construction.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace moepage::ds4::cpu {

class DeadlineWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // on_expiry runs on the watch's thread, at most once per arming, under the watch's lock: it must
  // be short (a store), must not throw, and must not call this watch.
  explicit DeadlineWatch(std::function<void()> on_expiry);
  ~DeadlineWatch();  // stops the thread (an armed deadline is dropped, not run)
  DeadlineWatch(const DeadlineWatch&) = delete;
  DeadlineWatch& operator=(const DeadlineWatch&) = delete;

  // Arms the watch to expire `after` from now; when already armed, moves its deadline there
  // (earlier or later). A watch that expired stays expired until disarmed: arming it again changes
  // nothing, so a caller that re-arms per step of a long wait still sees the expiry.
  void arm(Clock::duration after);
  // Whether the deadline passed (on_expiry has run or is running) since the watch was armed.
  bool expired() const { return deadline_.load(std::memory_order_acquire) == kExpired; }
  // Disarms; returns expired() as it was. When it had expired, returns only once on_expiry has
  // finished, so nothing it does can land after the caller's next step.
  bool disarm();
  // How many times the deadline passed since construction.
  uint64_t expiries() const { return expiries_.load(std::memory_order_acquire); }

 private:
  void watch();

  std::function<void()> on_expiry_;
  std::mutex mutex_;
  std::condition_variable wake_;
  static constexpr int64_t kExpired = -1;
  // One word, so that an expiry and a disarm cannot both win: nanoseconds since the clock's epoch
  // at which the armed deadline passes; 0 disarmed; kExpired once it passed (until disarmed).
  std::atomic<int64_t> deadline_{0};
  std::atomic<uint64_t> expiries_{0};
  bool stop_ = false;   // under mutex_
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace moepage::ds4::cpu
