#include "serve/generation_channel.hpp"

namespace moepage::serve {

void GenerationChannel::send_text(std::string_view text) {
  if (text.empty()) return;
  {
    std::lock_guard lock(mutex_);
    pending_ += text;
  }
  changed_.notify_all();
}

void GenerationChannel::finish(GenerationOutcome outcome) {
  {
    std::lock_guard lock(mutex_);
    outcome_ = std::move(outcome);
    ended_ = true;
  }
  changed_.notify_all();
}

void GenerationChannel::fail(std::string message) {
  {
    std::lock_guard lock(mutex_);
    error_ = std::move(message);
    ended_ = true;
  }
  changed_.notify_all();
}

GenerationChannel::Update GenerationChannel::take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return ended_ || !pending_.empty(); });
  Update out;
  out.text.swap(pending_);
  out.ended = ended_;
  return out;
}

std::string GenerationChannel::take_all() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return ended_; });
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace moepage::serve
