#include "cli/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace moepage::cli {

Sampler::Sampler(const SamplerSettings& settings, uint32_t vocab_size)
    : settings_(settings), rng_(settings.seed), order_(vocab_size), weights_(vocab_size) {}

namespace {

[[noreturn]] void throw_first_nan(std::span<const float> logits) {
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) throw std::runtime_error("sampler: logit " + std::to_string(i) + " is NaN");
  }
  throw std::logic_error("sampler: a NaN was seen but not found again");
}

// Greedy decoding runs once per token over the whole vocabulary (129,280 logits for
// DeepSeek-V4), so it must cost far less than a GPU decode step: one pass over four-wide vectors
// (GCC/Clang vector extensions, so any target's SIMD unit) keeping per lane the maximum, where it
// was first seen (a strict > never moves it to a later equal value) and whether a NaN went by.
// The lanes then merge: the largest value, the smallest index among equal ones.
using Float4 = float __attribute__((vector_size(16)));
using Int4 = int32_t __attribute__((vector_size(16)));

int32_t greedy_index(std::span<const float> logits) {
  constexpr int32_t kVectors = 4, kStep = 4 * kVectors;
  const float* p = logits.data();
  const int32_t n = static_cast<int32_t>(logits.size()), whole = n - n % kStep;
  const float low = -std::numeric_limits<float>::infinity();
  Float4 lane_max[kVectors];
  Int4 lane_at[kVectors];
  for (int32_t j = 0; j < kVectors; ++j) {
    lane_max[j] = Float4{low, low, low, low};
    lane_at[j] = Int4{4 * j, 4 * j + 1, 4 * j + 2, 4 * j + 3};  // -inf everywhere: the first index
  }
  Int4 nan_seen{0, 0, 0, 0};
  for (int32_t i = 0; i < whole; i += kStep) {
#pragma GCC unroll 4  // the lanes must live in registers, not be stored and reloaded every step
    for (int32_t j = 0; j < kVectors; ++j) {
      Float4 v;
      std::memcpy(&v, p + i + 4 * j, sizeof v);  // logits need not be 16-byte aligned
      const Int4 at = Int4{0, 1, 2, 3} + (i + 4 * j);
      const Int4 larger = v > lane_max[j];
      nan_seen |= v != v;
      lane_max[j] = larger ? v : lane_max[j];
      lane_at[j] = larger ? at : lane_at[j];
    }
  }
  float top = low;
  int32_t best = whole < n ? whole : 0;
  bool nan = false;
  for (int32_t i = whole; i < n; ++i) {
    nan = nan || p[i] != p[i];
    if (p[i] > top) top = p[i], best = i;
  }
  for (int32_t k = 0; k < 4; ++k) nan = nan || nan_seen[k] != 0;
  if (nan) throw_first_nan(logits);
  if (whole == 0) return best;
  if (!(top > low)) best = n;  // the tail held nothing above -inf: any lane wins ties against it
  for (int32_t j = 0; j < kVectors; ++j)
    for (int32_t k = 0; k < 4; ++k)
      if (lane_max[j][k] > top || (lane_max[j][k] == top && lane_at[j][k] < best))
        top = lane_max[j][k], best = lane_at[j][k];
  return best;
}

}  // namespace

int32_t Sampler::pick(std::span<const float> logits) {
  if (logits.size() != order_.size()) {
    throw std::runtime_error("sampler: got " + std::to_string(logits.size()) + " logits for a vocabulary of " +
                             std::to_string(order_.size()));
  }
  if (logits.empty()) throw std::runtime_error("sampler: the vocabulary is empty");
  if (settings_.temperature <= 0.0) return greedy_index(logits);
  if (std::any_of(logits.begin(), logits.end(), [](float v) { return std::isnan(v); })) throw_first_nan(logits);

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
