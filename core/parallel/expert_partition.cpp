#include "parallel/expert_partition.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace moepage::parallel {

ExpertPartition ExpertPartition::round_robin(uint32_t n_layers, uint32_t n_experts, uint32_t ranks,
                                             const std::string& key) {
  if (ranks == 0) throw std::invalid_argument(key + ": 0 ranks; give 1 or more");
  if (ranks > n_experts)
    throw std::invalid_argument(key + ": " + std::to_string(ranks) + " ranks but the model has " +
                                std::to_string(n_experts) + " routed experts per layer: every rank must own one");
  ExpertPartition p;
  p.n_layers_ = n_layers;
  p.n_experts_ = n_experts;
  p.ranks_ = ranks;
  p.owner_.resize(size_t(n_layers) * n_experts);
  for (size_t i = 0; i < p.owner_.size(); ++i) p.owner_[i] = uint32_t(i % n_experts) % ranks;
  return p;
}

ExpertPartition ExpertPartition::from_owners(uint32_t n_layers, uint32_t n_experts, uint32_t ranks,
                                             std::vector<uint32_t> owner) {
  if (ranks == 0 || owner.size() != size_t(n_layers) * n_experts)
    throw std::invalid_argument("expert partition: " + std::to_string(owner.size()) + " owners for " +
                                std::to_string(n_layers) + " layers of " + std::to_string(n_experts) + " experts");
  for (const uint32_t r : owner)
    if (r >= ranks) throw std::invalid_argument("expert partition: rank " + std::to_string(r) + " of " + std::to_string(ranks));
  ExpertPartition p;
  p.n_layers_ = n_layers;
  p.n_experts_ = n_experts;
  p.ranks_ = ranks;
  p.owner_ = std::move(owner);
  return p;
}

RankCatalog::RankCatalog(const mp_expert_catalog& full, const ExpertPartition& partition, uint32_t rank)
    : rank_(rank), n_experts_(full.n_experts) {
  if (partition.n_layers() != full.n_layers || partition.n_experts() != full.n_experts)
    throw std::invalid_argument("rank catalog: the partition does not cover the catalog's experts");
  locals_.assign(size_t(full.n_layers) * n_experts_, -1);
  for (uint32_t l = 0; l < full.n_layers; ++l) {
    uint32_t m = 0;
    for (uint32_t e = 0; e < n_experts_; ++e)
      if (partition.owner(l, e) == rank) locals_[size_t(l) * n_experts_ + e] = int32_t(m++);
    if (l > 0 && m != owned_)
      throw std::invalid_argument("rank " + std::to_string(rank) + " owns " + std::to_string(owned_) +
                                  " experts of layer 0 but " + std::to_string(m) + " of layer " + std::to_string(l) +
                                  ": a rank must own as many experts in every layer");
    owned_ = m;
  }
  globals_.resize(size_t(full.n_layers) * owned_);
  const uint32_t parts = full.n_parts;
  // Segments are re-packed at this host's element size (the stride is the first element's size).
  segments_.resize(size_t(full.n_layers) * owned_ * parts);
  for (uint32_t l = 0; l < full.n_layers; ++l)
    for (uint32_t e = 0; e < n_experts_; ++e) {
      const int32_t m = locals_[size_t(l) * n_experts_ + e];
      if (m < 0) continue;
      globals_[size_t(l) * owned_ + uint32_t(m)] = int32_t(e);
      for (uint32_t p = 0; p < parts; ++p) {
        const auto* in = static_cast<const mp_expert_segment*>(
            mp_array_element(full.segments, uint32_t((size_t(l) * n_experts_ + e) * parts + p)));
        mp_expert_segment& out = segments_[(size_t(l) * owned_ + uint32_t(m)) * parts + p];
        mp_read_struct(&out, sizeof out, in, sizeof out);
      }
    }
  std::memcpy(&catalog_, &full, std::min<size_t>(full.struct_size, sizeof catalog_));
  catalog_.struct_size = sizeof catalog_;
  catalog_.n_experts = owned_;
  catalog_.top_k = std::min(full.top_k, owned_);  // a token uses at most this many of the rank's experts
  catalog_.segments = segments_.data();
}

int32_t RankCatalog::local(uint32_t layer, int32_t global) const {
  if (global < 0 || uint32_t(global) >= n_experts_) return -1;
  return locals_[size_t(layer) * n_experts_ + uint32_t(global)];
}

}  // namespace moepage::parallel
