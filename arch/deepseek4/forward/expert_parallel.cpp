#include "deepseek4/forward/expert_parallel.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace moepage::ds4 {

ExpertOwnership ExpertOwnership::round_robin(uint32_t n_layers, uint32_t n_experts, uint32_t ranks) {
  if (ranks == 0) throw std::invalid_argument("expert ownership: 0 ranks");
  std::vector<uint32_t> owner(size_t(n_layers) * n_experts);
  for (size_t i = 0; i < owner.size(); ++i) owner[i] = uint32_t(i % n_experts) % ranks;
  return ExpertOwnership(n_layers, n_experts, ranks, std::move(owner));
}

ExpertOwnership::ExpertOwnership(uint32_t n_layers, uint32_t n_experts, uint32_t ranks, std::vector<uint32_t> owner)
    : n_layers_(n_layers), n_experts_(n_experts), ranks_(ranks), owner_(std::move(owner)) {
  if (ranks_ == 0) throw std::invalid_argument("expert ownership: 0 ranks");
  if (owner_.size() != size_t(n_layers_) * n_experts_)
    throw std::invalid_argument("expert ownership: " + std::to_string(owner_.size()) + " entries for " +
                                std::to_string(n_layers_) + " layers of " + std::to_string(n_experts_) + " experts");
  for (size_t i = 0; i < owner_.size(); ++i)
    if (owner_[i] >= ranks_)
      throw std::invalid_argument("expert ownership: layer " + std::to_string(i / n_experts_) + " expert " +
                                  std::to_string(i % n_experts_) + " belongs to rank " + std::to_string(owner_[i]) +
                                  ", expected below " + std::to_string(ranks_));
}

uint32_t ExpertOwnership::owned(uint32_t layer, uint32_t rank) const {
  const auto first = owner_.begin() + ptrdiff_t(size_t(layer) * n_experts_);
  return uint32_t(std::count(first, first + n_experts_, rank));
}

void Collective::all_reduce_sum_device(float*, uint64_t, void*) {
  throw std::runtime_error("the collective has no device all-reduce");
}

}  // namespace moepage::ds4
