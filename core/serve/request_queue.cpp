#include "serve/request_queue.hpp"

#include <exception>
#include <future>

#include "serve/api_error.hpp"

namespace moepage::serve {

RequestQueue::RequestQueue(ServeEngine& engine, ServeMetrics& metrics, size_t max_waiting)
    : engine_(engine), metrics_(metrics), max_waiting_(max_waiting), worker_([this] { work(); }) {}

RequestQueue::~RequestQueue() {
  drain();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void RequestQueue::enqueue(Task task) {
  {
    std::lock_guard lock(mutex_);
    if (draining_) throw ApiError(503, "the server is shutting down", {}, "shutting_down");
    if (task.generation) {
      if (waiting_generations_ >= max_waiting_)
        throw ApiError(429, "too many requests are waiting (" + std::to_string(max_waiting_) + "); retry later", {},
                       "queue_full");
      ++waiting_generations_;
      metrics_.set_queue_length(waiting_generations_);
    }
    tasks_.push_back(std::move(task));
  }
  changed_.notify_all();
}

std::shared_ptr<GenerationChannel> RequestQueue::submit(GenerationJob job) {
  auto channel = std::make_shared<GenerationChannel>();
  enqueue({[this, channel, job = std::move(job)] {
             // The worker thread must outlive any one request's failure.
             try {
               engine_.generate(job, *channel);
             } catch (const std::exception& e) {
               channel->fail(e.what());
             }
           },
           true});
  return channel;
}

void RequestQueue::swap(NamedProfile next) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> result = done->get_future();
  auto profile = std::make_shared<NamedProfile>(std::move(next));
  enqueue({[this, done, profile] {
             try {
               engine_.swap_profile(std::move(*profile));
               metrics_.record_swap(true);
               done->set_value();
             } catch (...) {
               metrics_.record_swap(false);
               done->set_exception(std::current_exception());
             }
           },
           false});
  result.get();
}

void RequestQueue::drain() {
  std::unique_lock lock(mutex_);
  draining_ = true;
  changed_.wait(lock, [&] { return tasks_.empty() && !running_task_; });
}

void RequestQueue::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and nothing left
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    if (task.generation) metrics_.set_queue_length(--waiting_generations_);
    running_task_ = true;
    lock.unlock();
    task.run();
    lock.lock();
    running_task_ = false;
    changed_.notify_all();
  }
}

}  // namespace moepage::serve
