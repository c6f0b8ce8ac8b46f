#include "deepseek4/cpu/thread_pool.hpp"

#include <algorithm>

namespace moepage::ds4::cpu {
namespace {
thread_local bool t_in_pool_job = false;

// Contiguous range of item indices for part `index` of `parts`.
void split(int64_t n, unsigned parts, unsigned index, int64_t& begin, int64_t& end) {
  const int64_t base = n / parts, extra = n % parts;
  begin = int64_t(index) * base + std::min<int64_t>(index, extra);
  end = begin + base + (int64_t(index) < extra ? 1 : 0);
}
}  // namespace

ThreadPool::ThreadPool(unsigned n_threads) {
  if (n_threads == 0) n_threads = std::max(1u, std::thread::hardware_concurrency());
  n_threads_ = n_threads;
  workers_.reserve(n_threads_ - 1);
  for (unsigned i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(int64_t n, int64_t min_chunk, Trampoline call, void* ctx) {
  if (n <= 0) return;
  const int64_t by_size = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const unsigned parts = unsigned(std::min<int64_t>(n_threads_, by_size));
  if (parts <= 1 || t_in_pool_job) {
    call(ctx, 0, n, 0);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    n_ = n;
    call_ = call;
    ctx_ = ctx;
    active_ = parts;
    pending_ = parts - 1;
    ++generation_;
  }
  wake_.notify_all();
  int64_t b, e;
  split(n, parts, 0, b, e);
  t_in_pool_job = true;
  call(ctx, b, e, 0);
  t_in_pool_job = false;
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::worker_loop(unsigned index) {
  uint64_t seen = 0;
  t_in_pool_job = true;
  for (;;) {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (index >= active_) continue;
    const int64_t n = n_;
    const unsigned parts = active_;
    Trampoline call = call_;
    void* ctx = ctx_;
    lock.unlock();
    int64_t b, e;
    split(n, parts, index, b, e);
    call(ctx, b, e, index);
    lock.lock();
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace moepage::ds4::cpu
