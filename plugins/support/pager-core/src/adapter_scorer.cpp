#include "moepage/pager_core/adapter_scorer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/half.hpp"

namespace moepage::pager {

AdapterScorer::AdapterScorer(const Adapter& adapter, uint32_t n_layers)
    : d_model_(adapter.d_model),
      n_experts_(adapter.n_experts),
      rank_(adapter.rank),
      entry_of_src_(n_layers, -1),
      low_(adapter.rank, 0.0f),
      order_(adapter.n_experts, 0) {
  a_.reserve(adapter.entries.size());
  b_.reserve(adapter.entries.size());
  bias_.reserve(adapter.entries.size());
  for (size_t i = 0; i < adapter.entries.size(); ++i) {
    const AdapterEntry& e = adapter.entries[i];
    if (e.src_layer >= n_layers)
      throw PagerError(ErrorKind::InvalidRequest, "adapter scorer: entry " + std::to_string(i) + " src_layer " +
                                                      std::to_string(e.src_layer) + " is beyond the model's " +
                                                      std::to_string(n_layers) + " layers");
    entry_of_src_[e.src_layer] = int32_t(i);
    std::vector<float> a(e.a.size()), b(e.b.size());
    std::transform(e.a.begin(), e.a.end(), a.begin(), half_to_float);
    std::transform(e.b.begin(), e.b.end(), b.begin(), half_to_float);
    a_.push_back(std::move(a));
    b_.push_back(std::move(b));
    bias_.push_back(e.bias);
  }
}

bool AdapterScorer::predicts_after(uint32_t src_layer) const {
  return src_layer < entry_of_src_.size() && entry_of_src_[src_layer] >= 0;
}

size_t AdapterScorer::entry_after(uint32_t src_layer) const {
  if (!predicts_after(src_layer))
    throw PagerError(ErrorKind::InvalidRequest,
                     "adapter scorer: no entry predicts the layer after layer " + std::to_string(src_layer));
  return size_t(entry_of_src_[src_layer]);
}

AdapterScorer::Weights AdapterScorer::weights(uint32_t src_layer) const {
  const size_t entry = entry_after(src_layer);
  return {a_[entry], b_[entry], bias_[entry]};
}

void AdapterScorer::score(uint32_t src_layer, std::span<const float> hidden, std::span<const float> gate_bias,
                          std::span<float> scores) {
  const size_t entry = entry_after(src_layer);
  if (hidden.size() != d_model_ || scores.size() != n_experts_ ||
      (!gate_bias.empty() && gate_bias.size() != n_experts_))
    throw PagerError(ErrorKind::InvalidRequest,
                     "adapter scorer: layer " + std::to_string(src_layer) + ": expected hidden[" +
                         std::to_string(d_model_) + "], scores[" + std::to_string(n_experts_) +
                         "] and gate_bias[0 or " + std::to_string(n_experts_) + "], got " +
                         std::to_string(hidden.size()) + ", " + std::to_string(scores.size()) + ", " +
                         std::to_string(gate_bias.size()));
  const float* a = a_[entry].data();
  const float* b = b_[entry].data();
  const std::vector<float>& bias = bias_[entry];
  for (uint32_t r = 0; r < rank_; ++r) {
    const float* row = a + size_t(r) * d_model_;
    float acc = 0.0f;
    for (uint32_t c = 0; c < d_model_; ++c) acc += row[c] * hidden[c];
    low_[r] = acc;
  }
  for (uint32_t e = 0; e < n_experts_; ++e) {
    const float* row = b + size_t(e) * rank_;
    float acc = (gate_bias.empty() ? 0.0f : gate_bias[e]) + (bias.empty() ? 0.0f : bias[e]);
    for (uint32_t r = 0; r < rank_; ++r) acc += row[r] * low_[r];
    scores[e] = acc;
  }
}

uint32_t AdapterScorer::top_m(std::span<const float> scores, uint32_t m, std::span<int32_t> out) {
  const uint32_t n = std::min<uint32_t>(uint32_t(scores.size()), uint32_t(order_.size()));
  const uint32_t k = std::min({m, n, uint32_t(out.size())});
  for (uint32_t i = 0; i < n; ++i) order_[i] = int32_t(i);
  // NaN compares as -infinity so the order stays strict and weak.
  auto key = [&](int32_t i) {
    const float v = scores[size_t(i)];
    return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v;
  };
  std::partial_sort(order_.begin(), order_.begin() + k, order_.begin() + n, [&](int32_t x, int32_t y) {
    const float kx = key(x), ky = key(y);
    return kx > ky || (kx == ky && x < y);
  });
  for (uint32_t i = 0; i < k; ++i) out[i] = order_[i];
  return k;
}

}  // namespace moepage::pager
