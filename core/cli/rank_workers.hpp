// Threads that run one job on every rank at once: rank 0 on the caller's thread, ranks 1..N-1 on
// threads started once (no thread is created per call, and a call allocates nothing). A job that
// throws on any rank is reported after every rank returned; the caller decides which error wins.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace moepage::cli {

class RankWorkers {
 public:
  using Job = void (*)(void* ctx, uint32_t rank);
  explicit RankWorkers(uint32_t ranks);
  ~RankWorkers();
  RankWorkers(const RankWorkers&) = delete;
  RankWorkers& operator=(const RankWorkers&) = delete;

  // Runs job(ctx, r) for every rank r and waits for all; errors()[r] is rank r's exception or null.
  void run(Job job, void* ctx);
  const std::vector<std::exception_ptr>& errors() const { return errors_; }

 private:
  void loop(uint32_t rank);

  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  Job job_ = nullptr;
  void* ctx_ = nullptr;
  uint64_t generation_ = 0;
  uint32_t running_ = 0;
  bool stop_ = false;
};

}  // namespace moepage::cli
