// The queue in front of the engine: generations and profile swaps wait here and one worker
// thread runs them one at a time, in arrival order (no batched decoding). A swap therefore runs
// after every generation queued before it and before every one queued after it.
//
// Draining (SIGTERM): new work is refused with a 503, and drain() returns once everything that
// was accepted has run.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "serve/generation_channel.hpp"
#include "serve/serve_engine.hpp"
#include "serve/serve_metrics.hpp"

namespace moepage::serve {

class RequestQueue {
 public:
  // At most `max_waiting` generations wait (the running one not counted); more get a 429.
  RequestQueue(ServeEngine& engine, ServeMetrics& metrics, size_t max_waiting);
  ~RequestQueue();  // drains, then stops the worker

  // Queues a generation; the channel carries its text and outcome. Throws ApiError 503 while
  // draining and 429 when the queue is full.
  std::shared_ptr<GenerationChannel> submit(GenerationJob job);
  // Queues a swap to `next` and waits for it; rethrows its ApiError.
  void swap(NamedProfile next);
  // Refuses new work from now on; returns when the queue is empty and nothing runs.
  void drain();

 private:
  struct Task {
    std::function<void()> run;
    bool generation = false;
  };
  void enqueue(Task task);
  void work();

  ServeEngine& engine_;
  ServeMetrics& metrics_;
  size_t max_waiting_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Task> tasks_;
  size_t waiting_generations_ = 0;
  bool running_task_ = false;
  bool draining_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace moepage::serve
