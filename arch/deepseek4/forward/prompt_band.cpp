#include "deepseek4/forward/prompt_band.hpp"

#include <algorithm>

namespace moepage::ds4 {

PromptBand::PromptBand(uint32_t n_experts, uint32_t top_k) : n_experts_(n_experts), top_k_(top_k) {
  used_.assign(n_experts, 0);
  first_.reserve(n_experts);
}

std::span<const int32_t> PromptBand::collect(uint32_t band) {
  first_.clear();
  uint32_t distinct = 0;
  for (uint32_t e = 0; e < n_experts_; ++e) {
    if (!used_[e]) continue;
    if (first_.size() < band) first_.push_back(int32_t(e));
    ++distinct;
  }
  std::fill(used_.begin(), used_.end(), uint8_t{0});
  if (distinct <= band) first_.clear();  // one band: the step's hints staged it
  return first_;
}

std::span<const int32_t> PromptBand::first_band(const int32_t* routed, int64_t S, uint32_t band) {
  if (S <= 0 || band >= n_experts_) return {};
  if (routed == nullptr) {
    if (uint64_t(S) * top_k_ < 4ull * n_experts_) return {};
    std::fill(used_.begin(), used_.end(), uint8_t{1});
  } else {
    for (int64_t i = 0; i < S * int64_t(top_k_); ++i)
      if (routed[i] >= 0 && uint32_t(routed[i]) < n_experts_) used_[size_t(routed[i])] = 1;
  }
  return collect(band);
}

std::span<const int32_t> PromptBand::first_band_hashed(const int32_t* tid2eid, uint32_t vocab, const int32_t* tokens,
                                                       int64_t S, uint32_t band) {
  if (S <= 0 || band >= n_experts_) return {};
  for (int64_t s = 0; s < S; ++s) {
    if (tokens[s] < 0 || uint32_t(tokens[s]) >= vocab) continue;
    const int32_t* row = tid2eid + int64_t(tokens[s]) * top_k_;
    for (uint32_t j = 0; j < top_k_; ++j)
      if (row[j] >= 0 && uint32_t(row[j]) < n_experts_) used_[size_t(row[j])] = 1;
  }
  return collect(band);
}

}  // namespace moepage::ds4
