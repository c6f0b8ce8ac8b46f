// A small persistent thread pool. parallel_for splits [0, n) into one contiguous range per
// thread (the caller runs the first range) and returns when all ranges are done. Nothing is
// allocated per call: the callable is passed by address through a type-erased trampoline.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace moepage::ds4::cpu {

class ThreadPool {
 public:
  // n_threads counts the calling thread; 0 picks std::thread::hardware_concurrency().
  explicit ThreadPool(unsigned n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return n_threads_; }

  // fn(begin, end, worker) with worker in [0, size()). Ranges smaller than min_chunk items are
  // not worth a wake-up, so fewer threads are used for small n. Calls from inside a worker run
  // inline (no nested parallelism, no deadlock).
  template <class F>
  void parallel_for(int64_t n, F&& fn, int64_t min_chunk = 1) {
    using Fn = std::remove_reference_t<F>;
    run(
        n, min_chunk, [](void* ctx, int64_t b, int64_t e, unsigned w) { (*static_cast<Fn*>(ctx))(b, e, w); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using Trampoline = void (*)(void*, int64_t, int64_t, unsigned);
  void run(int64_t n, int64_t min_chunk, Trampoline call, void* ctx);
  void worker_loop(unsigned index);

  unsigned n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  unsigned active_ = 0;  // threads taking part in the current job (caller included)
  int64_t n_ = 0;
  Trampoline call_ = nullptr;
  void* ctx_ = nullptr;
  bool stop_ = false;
};

}  // namespace moepage::ds4::cpu
