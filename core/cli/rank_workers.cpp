#include "cli/rank_workers.hpp"

namespace moepage::cli {

RankWorkers::RankWorkers(uint32_t ranks) : errors_(ranks) {
  for (uint32_t r = 1; r < ranks; ++r) threads_.emplace_back([this, r] { loop(r); });
}

RankWorkers::~RankWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RankWorkers::run(Job job, void* ctx) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::exception_ptr& e : errors_) e = nullptr;
    job_ = job;
    ctx_ = ctx;
    running_ = uint32_t(threads_.size());
    ++generation_;
  }
  start_.notify_all();
  try {
    job(ctx, 0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return running_ == 0; });
}

void RankWorkers::loop(uint32_t rank) {
  uint64_t seen = 0;
  for (;;) {
    Job job = nullptr;
    void* ctx = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      ctx = ctx_;
    }
    std::exception_ptr error;
    try {
      job(ctx, rank);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    errors_[rank] = error;
    if (--running_ == 0) done_.notify_all();
  }
}

}  // namespace moepage::cli
