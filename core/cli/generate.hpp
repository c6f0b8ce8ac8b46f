// The decode loop of `moepage run` and `moepage serve`: the prompt as one prefill, then one token
// per forward until max_tokens, the end-of-sequence token, or the caller says stop.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "moepage/cpp/host_handles.hpp"
#include "profile/profile.hpp"

namespace moepage::cli {

struct GenerationTimes {
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
  uint32_t decoded = 0;  // forwards of one token
};

// Logits rows as they are computed: the prompt's P rows (row t = logits at position t), then one
// row per decode forward. Setting it makes the prefill compute every prompt row.
using LogitsSink = std::function<void(const float* rows, uint32_t n_rows)>;

// Asked after each token is picked; true ends generation there (an interrupted run).
using StopRequested = std::function<bool()>;

// What generate() drives: one architecture (ArchForward) or a group of expert-parallel ranks that
// run every call together (rank_stacks.hpp).
class Forward {
 public:
  virtual ~Forward() = default;
  virtual void reset_sequence() = 0;
  virtual void forward(std::span<const int32_t> tokens, float* logits, uint32_t flags) = 0;
  virtual bool has_forward_greedy() const = 0;
  virtual int32_t forward_greedy(std::span<const int32_t> tokens) = 0;
};

// One architecture instance as a Forward.
class ArchForward final : public Forward {
 public:
  explicit ArchForward(mp::ArchHandle& arch) : arch_(arch) {}
  void reset_sequence() override { arch_.reset_sequence(); }
  void forward(std::span<const int32_t> tokens, float* logits, uint32_t flags) override {
    arch_.forward(tokens, logits, flags);
  }
  bool has_forward_greedy() const override { return arch_.has_forward_greedy(); }
  int32_t forward_greedy(std::span<const int32_t> tokens) override { return arch_.forward_greedy(tokens); }

 private:
  mp::ArchHandle& arch_;
};

// Returns the generated ids (without the prompt); `on_token` sees each one as it is picked and
// returns false to stop there (a stop string matched, a client went away): no further forward runs.
// Throws std::runtime_error for a prompt id outside the vocabulary or an empty prompt.
std::vector<int32_t> generate(Forward& arch, const mp_model_info& info, std::span<const int32_t> prompt,
                              const profile::GenerateSettings& settings, const std::function<bool(int32_t)>& on_token,
                              GenerationTimes& times, const LogitsSink& on_logits = {}, const StopRequested& stop = {});
inline std::vector<int32_t> generate(mp::ArchHandle& arch, const mp_model_info& info, std::span<const int32_t> prompt,
                                     const profile::GenerateSettings& settings,
                                     const std::function<bool(int32_t)>& on_token, GenerationTimes& times,
                                     const LogitsSink& on_logits = {}, const StopRequested& stop = {}) {
  ArchForward one(arch);
  return generate(one, info, prompt, settings, on_token, times, on_logits, stop);
}

}  // namespace moepage::cli
