// One generation, shared by the HTTP thread that answers the client and the engine's worker
// thread that runs it. The worker sends text as it is decoded and finishes with the outcome (or
// an error); the HTTP side waits for text, and cancels when its client has gone away, which the
// worker sees before its next forward.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.hpp"

namespace moepage::serve {

// What the worker runs.
struct GenerationJob {
  std::vector<int32_t> prompt;
  profile::GenerateSettings settings;  // max_tokens, temperature, top_k, top_p, seed
  std::vector<std::string> stop;
  std::string endpoint;  // "completions" or "chat.completions", for /metrics
};

struct GenerationOutcome {
  std::string finish_reason;  // stop | length (cancelled when the client left)
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  std::vector<int32_t> token_ids;
  std::string profile;  // the profile that served it
};

class GenerationChannel {
 public:
  // Worker side.
  void send_text(std::string_view text);
  void finish(GenerationOutcome outcome);
  void fail(std::string message);
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // HTTP side.
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  struct Update {
    std::string text;  // sent since the last take (may be empty)
    bool ended = false;
  };
  // Waits until text arrives, the generation ends, or `timeout` passes.
  Update take(std::chrono::milliseconds timeout);
  // Waits for the end; returns all text not taken yet.
  std::string take_all();
  // Valid once ended.
  const GenerationOutcome& outcome() const { return outcome_; }
  const std::optional<std::string>& error() const { return error_; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string pending_;
  bool ended_ = false;
  GenerationOutcome outcome_;
  std::optional<std::string> error_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace moepage::serve
