// Picks the next token from logits: greedy (temperature 0) or sampled with temperature, top-k and
// top-p, from a seeded generator so a run is repeatable. Scratch is sized once for the vocabulary.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace moepage::cli {

struct SamplerSettings {
  double temperature = 0.0;  // 0: greedy
  uint32_t top_k = 0;        // 0: keep every token
  double top_p = 1.0;        // 1: no nucleus cut
  uint64_t seed = 0;
};

class Sampler {
 public:
  Sampler(const SamplerSettings& settings, uint32_t vocab_size);
  // Throws std::runtime_error when the logits hold a NaN or have the wrong length.
  int32_t pick(std::span<const float> logits);

 private:
  SamplerSettings settings_;
  std::mt19937_64 rng_;
  std::vector<uint32_t> order_;
  std::vector<double> weights_;
};

}  // namespace moepage::cli
