// DeadlineWatch: runs its callback once when an armed deadline passes, never when disarmed in
// time, follows a deadline moved later or earlier, and stays expired until disarmed. The waits
// below are generous bounds for a loaded machine, not measurements.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "deepseek4/cpu/deadline_watch.hpp"

using moepage::ds4::cpu::DeadlineWatch;
using namespace std::chrono_literals;

namespace {

// Polls until pred holds or `limit` passes; returns pred().
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
  return pred();
}

}  // namespace

TEST_CASE("a deadline that passes runs the callback once and stays expired until disarmed") {
  std::atomic<int> runs{0};
  DeadlineWatch watch([&] { runs.fetch_add(1); });
  watch.arm(20ms);
  REQUIRE(eventually([&] { return runs.load() == 1; }));
  CHECK(watch.expired());
  CHECK(watch.expiries() == 1);
  watch.arm(10s);  // an expired watch ignores a new deadline: the caller must see the expiry
  CHECK(watch.expired());
  std::this_thread::sleep_for(50ms);
  CHECK(runs.load() == 1);
  CHECK(watch.disarm());
  CHECK_FALSE(watch.expired());
  CHECK_FALSE(watch.disarm());
}

TEST_CASE("a watch disarmed in time never runs the callback") {
  std::atomic<int> runs{0};
  DeadlineWatch watch([&] { runs.fetch_add(1); });
  for (int i = 0; i < 100; ++i) {
    watch.arm(10s);
    CHECK_FALSE(watch.disarm());
  }
  watch.arm(200ms);
  CHECK_FALSE(watch.disarm());
  std::this_thread::sleep_for(400ms);  // past the disarmed deadline
  CHECK(runs.load() == 0);
  CHECK(watch.expiries() == 0);
}

TEST_CASE("a deadline moved later before it passes does not expire at the old time") {
  std::atomic<int> runs{0};
  DeadlineWatch watch([&] { runs.fetch_add(1); });
  watch.arm(300ms);
  const auto until = std::chrono::steady_clock::now() + 900ms;
  while (std::chrono::steady_clock::now() < until) {  // three times the deadline, re-armed often
    watch.arm(300ms);
    std::this_thread::sleep_for(10ms);
  }
  CHECK(runs.load() == 0);
  CHECK(eventually([&] { return runs.load() == 1; }));  // left alone, it passes
  CHECK(watch.disarm());
}

TEST_CASE("a deadline moved earlier wakes the watch") {
  std::atomic<int> runs{0};
  DeadlineWatch watch([&] { runs.fetch_add(1); });
  watch.arm(1h);
  std::this_thread::sleep_for(20ms);  // the thread now sleeps towards the hour
  watch.arm(10ms);
  CHECK(eventually([&] { return runs.load() == 1; }, 3000ms));
  CHECK(watch.disarm());
  watch.arm(10s);  // usable again after disarming
  CHECK_FALSE(watch.expired());
  CHECK_FALSE(watch.disarm());
}

TEST_CASE("destroying an armed watch drops its deadline and returns at once") {
  std::atomic<int> runs{0};
  const auto start = std::chrono::steady_clock::now();
  {
    DeadlineWatch watch([&] { runs.fetch_add(1); });
    watch.arm(1h);
  }
  CHECK(runs.load() == 0);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("disarming an expired watch returns only after its callback finished") {
  std::atomic<bool> finished{false};
  DeadlineWatch watch([&] {
    std::this_thread::sleep_for(100ms);  // a slow callback (the real one is a store)
    finished.store(true);
  });
  watch.arm(1ms);
  REQUIRE(eventually([&] { return watch.expired(); }));
  CHECK(watch.disarm());
  CHECK(finished.load());
}
