// The model as the server holds it: the plugin stack (or expert-parallel ranks) built from the
// serving profile, the tokenizer, and the generation loop of `moepage run` with text decoding and
// stop strings on top.
// generate() and swap_profile() run on the request queue's worker thread only, one at a time;
// the accessors may be called from any thread.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "cli/plugin_stack_loading.hpp"
#include "host/host_api.hpp"
#include "host/registry.hpp"
#include "profile/profile.hpp"
#include "serve/generation_channel.hpp"
#include "serve/serve_metrics.hpp"
#include "serve/served_stack.hpp"
#include "tokenizer/tokenizer.hpp"

namespace moepage::serve {

// A profile ready to serve: loaded (with its overrides) and named for /metrics.
struct NamedProfile {
  profile::Profile profile;
  std::string name;
};

class ServeEngine {
 public:
  // Loads the profile's stack; throws what `moepage run` would for the same profile.
  ServeEngine(NamedProfile initial, std::unique_ptr<host::HostApi> host, std::unique_ptr<host::Registry> registry,
              tokenizer::Tokenizer tok, ServeMetrics& metrics);
  ~ServeEngine();

  // Runs one generation, sending its text to `channel` and finishing it (or failing it).
  void generate(const GenerationJob& job, GenerationChannel& channel);
  // Replaces the stack with one built from `next` (same model and device). The old stack is torn
  // down first, so its memory is free for the new pager's budget; if the new one cannot be
  // built, the old one is built again and the error is thrown as an ApiError.
  void swap_profile(NamedProfile next);

  const tokenizer::Tokenizer& tokenizer() const { return tok_; }
  const profile::Profile& initial_profile() const { return initial_; }
  // Positions one sequence may hold (prompt + generated), 0 for no limit.
  uint64_t max_positions() const { return max_positions_.load(); }
  uint32_t vocab_size() const { return vocab_size_.load(); }
  std::string profile_name() const;
  // False when a failed swap could not restore the previous stack either.
  bool serving() const { return serving_.load(); }

 private:
  void publish_profile();

  profile::Profile initial_;
  std::unique_ptr<host::HostApi> host_;
  std::unique_ptr<host::Registry> registry_;
  tokenizer::Tokenizer tok_;
  ServeMetrics& metrics_;
  NamedProfile current_;
  std::unique_ptr<cli::ResolvedStack> resolved_;  // not moved: plugins saw its option views
  std::unique_ptr<ServedStack> loaded_;
  uint64_t expert_payload_bytes_ = 0;  // bytes one expert's parts hold
  std::atomic<uint64_t> max_positions_{0};
  std::atomic<uint32_t> vocab_size_{0};
  std::atomic<bool> serving_{false};
  mutable std::mutex name_mutex_;
  std::string name_;
};

}  // namespace moepage::serve
