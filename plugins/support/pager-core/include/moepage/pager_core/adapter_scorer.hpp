// Scores layer L+1's experts from layer L's hidden state with an HFADPT adapter:
//   scores = B (A h_L) + entry bias (HFADPT v2) + gate_bias_{L+1}
// and picks the top M. The router still decides; a prediction only steers prefetch. Weights are
// widened to float once at construction; score() and top_m() do not allocate.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "moepage/pager_core/adapter_file.hpp"

namespace moepage::pager {

class AdapterScorer {
 public:
  AdapterScorer(const Adapter& adapter, uint32_t n_layers);

  uint32_t d_model() const { return d_model_; }
  uint32_t n_experts() const { return n_experts_; }
  uint32_t rank() const { return rank_; }
  // Whether an entry predicts the layer after `src_layer`.
  bool predicts_after(uint32_t src_layer) const;

  // scores[n_experts] from hidden[d_model]; gate_bias is empty or [n_experts] (layer src+1's).
  void score(uint32_t src_layer, std::span<const float> hidden, std::span<const float> gate_bias,
             std::span<float> scores);
  // The weights of the entry after `src_layer` (which must predict), widened to float:
  // a [rank][d_model], b [n_experts][rank], bias [n_experts] or empty (v1). score() computes
  // b (a h) + bias (+ gate_bias); a host may evaluate the same product elsewhere.
  struct Weights {
    std::span<const float> a, b, bias;
  };
  Weights weights(uint32_t src_layer) const;
  // The indices of the m highest scores, highest first (ties: lower index first; NaN ranks
  // last). Writes min(m, n_experts) indices into out and returns that count.
  uint32_t top_m(std::span<const float> scores, uint32_t m, std::span<int32_t> out);

 private:
  // The entry predicting the layer after src_layer; throws when none does.
  size_t entry_after(uint32_t src_layer) const;

  uint32_t d_model_, n_experts_, rank_;
  std::vector<int32_t> entry_of_src_;     // [n_layers] entry index or -1
  std::vector<std::vector<float>> a_;     // per entry [rank][d_model]
  std::vector<std::vector<float>> b_;     // per entry [n_experts][rank]
  std::vector<std::vector<float>> bias_;  // per entry [n_experts] or empty (v1)
  std::vector<float> low_;                // scratch [rank]: A h
  std::vector<int32_t> order_;            // scratch [n_experts]
};

}  // namespace moepage::pager
