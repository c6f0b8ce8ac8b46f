#include "cli/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace moepage::cli {

Sampler::Sampler(const SamplerSettings& settings, uint32_t vocab_size)
    : settings_(settings), rng_(settings.seed), order_(vocab_size), weights_(vocab_size) {}

int32_t Sampler::pick(std::span<const float> logits) {
  if (logits.size() != order_.size()) {
    throw std::runtime_error("sampler: got " + std::to_string(logits.size()) + " logits for a vocabulary of " +
                             std::to_string(order_.size()));
  }
  if (logits.empty()) throw std::runtime_error("sampler: the vocabulary is empty");
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) throw std::runtime_error("sampler: logit " + std::to_string(i) + " is NaN");
  }
  if (settings_.temperature <= 0.0) {
    // The first of equal maxima, so greedy output does not depend on the library's max_element.
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
      if (logits[i] > logits[best]) best = i;
    }
    return static_cast<int32_t>(best);
  }

  std::iota(order_.begin(), order_.end(), 0u);
  size_t keep = order_.size();
  if (settings_.top_k > 0 && settings_.top_k < keep) keep = settings_.top_k;
  // Highest logits first; ties by index so the candidate order is deterministic.
  auto higher = [&](uint32_t a, uint32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(keep), order_.end(), higher);

  const double top = logits[order_[0]];
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    weights_[i] = std::exp((static_cast<double>(logits[order_[i]]) - top) / settings_.temperature);
    total += weights_[i];
  }
  if (settings_.top_p < 1.0) {
    double mass = 0.0;
    size_t nucleus = 0;
    while (nucleus < keep) {
      mass += weights_[nucleus] / total;
      ++nucleus;
      if (mass >= settings_.top_p) break;
    }
    keep = nucleus;
    total = std::accumulate(weights_.begin(), weights_.begin() + static_cast<std::ptrdiff_t>(keep), 0.0);
  }
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  for (size_t i = 0; i < keep; ++i) {
    r -= weights_[i];
    if (r < 0.0) return static_cast<int32_t>(order_[i]);
  }
  return static_cast<int32_t>(order_[keep - 1]);  // rounding left r a hair above zero
}

}  // namespace moepage::cli
