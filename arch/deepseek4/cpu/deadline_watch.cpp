// DeadlineWatch (deadline_watch.hpp).
#include "deepseek4/cpu/deadline_watch.hpp"

#include <algorithm>
#include <utility>

namespace moepage::ds4::cpu {
namespace {

int64_t ticks(DeadlineWatch::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

DeadlineWatch::DeadlineWatch(std::function<void()> on_expiry)
    : on_expiry_(std::move(on_expiry)), thread_([this] { watch(); }) {}

DeadlineWatch::~DeadlineWatch() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void DeadlineWatch::arm(Clock::duration after) {
  const int64_t at = std::max<int64_t>(1, ticks(Clock::now() + after));  // never 0 (disarmed)
  // Moving an armed deadline later is a store: the thread wakes at the old one and finds it.
  int64_t now = deadline_.load(std::memory_order_acquire);
  while (now > 0 && now <= at)
    if (deadline_.compare_exchange_weak(now, at, std::memory_order_acq_rel)) return;
  if (now == kExpired) return;
  // From rest, or earlier: the thread must hear of it. The thread takes an expiry only while it
  // holds the mutex, so under it the check and the store cannot lose one, nor the wake-up slip
  // between the thread's check and its wait.
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (deadline_.load(std::memory_order_acquire) == kExpired) return;
    deadline_.store(at, std::memory_order_release);
  }
  wake_.notify_one();
}

bool DeadlineWatch::disarm() {
  if (deadline_.exchange(0, std::memory_order_acq_rel) != kExpired) return false;
  const std::lock_guard<std::mutex> lock(mutex_);  // the thread runs on_expiry under it
  return true;
}

void DeadlineWatch::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || deadline_.load(std::memory_order_acquire) > 0; });
    if (stop_) return;
    int64_t at = deadline_.load(std::memory_order_acquire);
    if (at <= 0) continue;
    if (ticks(Clock::now()) < at) {
      const Clock::time_point when{std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(at))};
      wake_.wait_until(lock, when, [&] { return stop_ || deadline_.load(std::memory_order_acquire) != at; });
      continue;  // stopped, disarmed, moved or passed: look again
    }
    // Passed, unless the caller disarmed or moved it meanwhile: take it, so it runs once, and run
    // it before letting go of the lock (disarm waits on the lock for it).
    if (!deadline_.compare_exchange_strong(at, kExpired, std::memory_order_acq_rel)) continue;
    expiries_.fetch_add(1, std::memory_order_acq_rel);
    on_expiry_();
  }
}

}  // namespace moepage::ds4::cpu
