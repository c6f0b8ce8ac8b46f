#include "cli/generate.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "cli/sampler.hpp"

namespace moepage::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::vector<int32_t> generate(Forward& arch, const mp_model_info& info, std::span<const int32_t> prompt,
                              const profile::GenerateSettings& settings, const std::function<bool(int32_t)>& on_token,
                              GenerationTimes& times, const LogitsSink& on_logits, const StopRequested& stop) {
  if (prompt.empty()) throw std::runtime_error("the prompt is empty: set generate.prompt or generate.prompt_ids");
  for (int32_t id : prompt) {
    if (id < 0 || static_cast<uint32_t>(id) >= info.vocab_size) {
      throw std::runtime_error("prompt token id " + std::to_string(id) + " is outside the model's vocabulary (0 to " +
                               std::to_string(info.vocab_size - 1) + ")");
    }
  }
  if (info.max_positions > 0 && prompt.size() + settings.max_tokens > info.max_positions) {
    throw std::runtime_error("prompt (" + std::to_string(prompt.size()) + " tokens) plus max_tokens (" +
                             std::to_string(settings.max_tokens) + ") exceeds the model's " +
                             std::to_string(info.max_positions) + " positions");
  }
  Sampler sampler({settings.temperature, settings.top_k, settings.top_p, settings.seed}, info.vocab_size);
  std::vector<float> logits(info.vocab_size);
  std::vector<int32_t> out;
  out.reserve(settings.max_tokens);
  // Greedy decoding without a logits consumer lets the architecture pick the token itself (a GPU
  // build then copies 8 bytes per step instead of the vocabulary's logits).
  const bool arch_picks = settings.temperature <= 0.0 && !on_logits && arch.has_forward_greedy();
  // One decode step: the token after `tokens`.
  auto next_after = [&](std::span<const int32_t> tokens) {
    if (arch_picks) {
      const int32_t next = arch.forward_greedy(tokens);
      if (next < 0 || static_cast<uint32_t>(next) >= info.vocab_size)
        throw std::runtime_error("the architecture picked token " + std::to_string(next) + ", outside the vocabulary");
      return next;
    }
    arch.forward(tokens, logits.data(), MP_FORWARD_LAST_LOGITS);
    if (on_logits) on_logits(logits.data(), 1);
    return sampler.pick(logits);
  };

  for (uint32_t i = 0; i < settings.warmup_prefills; ++i) {
    arch.reset_sequence();
    (void)next_after(prompt);
  }
  arch.reset_sequence();
  auto start = std::chrono::steady_clock::now();
  int32_t next;
  if (on_logits) {
    std::vector<float> rows(prompt.size() * info.vocab_size);
    arch.forward(prompt, rows.data(), MP_FORWARD_ALL_LOGITS);
    times.prefill_seconds = seconds_since(start);
    on_logits(rows.data(), static_cast<uint32_t>(prompt.size()));
    std::copy(rows.end() - info.vocab_size, rows.end(), logits.begin());
    next = sampler.pick(logits);
  } else {
    next = next_after(prompt);
    times.prefill_seconds = seconds_since(start);
  }

  start = std::chrono::steady_clock::now();
  for (uint32_t step = 0; step < settings.max_tokens; ++step) {
    out.push_back(next);
    if (!on_token(next) || (next == info.eos_token && !settings.ignore_eos) || step + 1 == settings.max_tokens ||
        (stop && stop()))
      break;
    next = next_after(std::span<const int32_t>(&out.back(), 1));
    ++times.decoded;
  }
  times.decode_seconds = seconds_since(start);
  return out;
}

}  // namespace moepage::cli
