// Which rank owns each routed expert, and what one rank's pager sees: a catalog of its own
// experts only. The host builds both from the architecture's catalog, so every pager plugin,
// of any ABI minor, sizes its pools and (the resident pager) loads only the rank's share, and
// a rank never pages an expert it does not own.
//
// A rank's catalog renumbers its experts 0..m-1 in ascending global id (m = the experts it owns in
// each layer; round-robin gives every layer the same m). RankPagerRef (rank_pager.hpp) translates
// the architecture's global ids to these on the way to the pager and back in trace events.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "moepage/moepage.h"

namespace moepage::parallel {

class ExpertPartition {
 public:
  // Expert e of every layer belongs to rank e mod ranks. Throws std::invalid_argument (one line,
  // naming `key`) for 0 ranks or more ranks than experts per layer.
  static ExpertPartition round_robin(uint32_t n_layers, uint32_t n_experts, uint32_t ranks, const std::string& key);

  // owner[layer * n_experts + e] = rank, each below `ranks` (partition_table.hpp checks files).
  static ExpertPartition from_owners(uint32_t n_layers, uint32_t n_experts, uint32_t ranks,
                                     std::vector<uint32_t> owner);

  uint32_t ranks() const { return ranks_; }
  uint32_t n_layers() const { return n_layers_; }
  uint32_t n_experts() const { return n_experts_; }
  uint32_t owner(uint32_t layer, uint32_t expert) const { return owner_[size_t(layer) * n_experts_ + expert]; }
  // [n_layers * n_experts], for mp_expert_parallel.owner.
  const std::vector<uint32_t>& table() const { return owner_; }

 private:
  uint32_t n_layers_ = 0, n_experts_ = 0, ranks_ = 1;
  std::vector<uint32_t> owner_;
};

// One rank's catalog: the architecture's, cut to the rank's experts and renumbered.
class RankCatalog {
 public:
  // `full` must outlive this catalog (file names and part tables are shared with it). Throws
  // std::invalid_argument when the rank owns a different number of experts in two layers.
  RankCatalog(const mp_expert_catalog& full, const ExpertPartition& partition, uint32_t rank);
  RankCatalog(const RankCatalog&) = delete;
  RankCatalog& operator=(const RankCatalog&) = delete;

  const mp_expert_catalog& abi() const { return catalog_; }
  uint32_t rank() const { return rank_; }
  // The rank's id of a global expert of `layer`, or -1 when another rank owns it.
  int32_t local(uint32_t layer, int32_t global) const;
  // The global id of the rank's expert `local` of `layer`.
  int32_t global(uint32_t layer, uint32_t local) const { return globals_[size_t(layer) * owned_ + local]; }
  uint32_t owned_per_layer() const { return owned_; }

 private:
  uint32_t rank_;
  uint32_t n_experts_;  // global, per layer
  uint32_t owned_ = 0;
  std::vector<int32_t> locals_;   // [layer * n_experts + global] -> local or -1
  std::vector<int32_t> globals_;  // [layer * owned + local] -> global
  std::vector<mp_expert_segment> segments_;
  mp_expert_catalog catalog_{};
};

}  // namespace moepage::parallel
