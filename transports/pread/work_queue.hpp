// A fixed set of worker threads draining two FIFO queues, demand before prefetch: a speculative
// read never delays one the compute step waits for. Jobs are plain values kept in ring buffers
// that only grow, so a steady workload stops allocating once the rings are large enough.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

namespace moepage::pread {

// A FIFO over a ring buffer; capacity doubles when full and never shrinks.
template <class Job>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  void push(const Job& job) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) % slots_.size()] = job;
    ++size_;
  }
  Job pop() {
    Job job = std::move(slots_[head_]);
    head_ = (head_ + 1) % slots_.size();
    --size_;
    return job;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  void grow() {
    std::vector<Job> bigger(slots_.empty() ? 64 : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    slots_ = std::move(bigger);
    head_ = 0;
  }
  std::vector<Job> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

// Worker threads that call `run(job, worker_index)` for each queued job. Destruction drops jobs
// that have not started and joins the workers after their current job.
template <class Job>
class WorkQueue {
 public:
  using Runner = std::function<void(Job&, uint32_t worker)>;

  WorkQueue(uint32_t threads, Runner run) : run_(std::move(run)) {
    workers_.reserve(threads);
    for (uint32_t i = 0; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~WorkQueue() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      demand_.clear();
      prefetch_.clear();
    }
    ready_.notify_all();
    for (auto& worker : workers_) worker.join();
  }
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  uint32_t threads() const { return static_cast<uint32_t>(workers_.size()); }

  // Queues jobs in order; `demand` jobs go ahead of every queued prefetch job.
  void push(std::span<const Job> jobs, bool demand) {
    if (jobs.empty()) return;
    {
      std::lock_guard lock(mutex_);
      RingQueue<Job>& queue = demand ? demand_ : prefetch_;
      for (const Job& job : jobs) queue.push(job);
    }
    if (jobs.size() == 1) {
      ready_.notify_one();
    } else {
      ready_.notify_all();
    }
  }

  // Jobs waiting to start (for tests and stats).
  size_t queued() const {
    std::lock_guard lock(mutex_);
    return demand_.size() + prefetch_.size();
  }

 private:
  void work(uint32_t index) {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !demand_.empty() || !prefetch_.empty(); });
        if (stopping_) return;
        job = !demand_.empty() ? demand_.pop() : prefetch_.pop();
      }
      run_(job, index);
    }
  }

  Runner run_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  RingQueue<Job> demand_;
  RingQueue<Job> prefetch_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;  // last: started after everything they use exists
};

}  // namespace moepage::pread
