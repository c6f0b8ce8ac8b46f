#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "deepseek4/cpu/thread_pool.hpp"

using moepage::ds4::cpu::ThreadPool;

TEST_CASE("parallel_for visits every index exactly once, for any n") {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 2, 3, 7, 1000}) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    for (int rep = 0; rep < 20; ++rep)
      pool.parallel_for(n, [&](int64_t b, int64_t e, unsigned worker) {
        CHECK(worker < 3);
        for (int64_t i = b; i < e; ++i) seen[size_t(i)]++;
      });
    for (auto& s : seen) CHECK(s.load() == 20);
  }
}

TEST_CASE("a parallel_for inside a worker runs inline instead of deadlocking") {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  pool.parallel_for(4, [&](int64_t b, int64_t e, unsigned) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(10, [&](int64_t b2, int64_t e2, unsigned) { total += int(e2 - b2); });
  });
  CHECK(total.load() == 40);
}

TEST_CASE("min_chunk keeps small jobs on the calling thread") {
  ThreadPool pool(2);
  unsigned max_worker = 0;
  pool.parallel_for(
      10, [&](int64_t, int64_t, unsigned w) { max_worker = std::max(max_worker, w); }, 100);
  CHECK(max_worker == 0);
}
