// Expert parallelism in the forward pass: ranks that each own a share of every layer's routed
// experts. Every rank runs the same dense layers on the same tokens and routes identically; in
// each MoE block a rank computes only the chosen experts it owns (and rank 0 the shared expert),
// then one all-reduce sums the ranks' partial outputs, so every rank continues with the whole
// block output. A rank never asks its expert source for an expert it does not own: its pager and
// budget cover its share only, and no expert is counted twice.
//
// The collective is an interface so the same forward pass runs over any collective: the plugin
// adapts the host's mp_collective (abi_collective.hpp), which today is the host's ranks as threads
// of one process (core/parallel/local_group.hpp), summing on the host or, for GPU ranks, through a
// library such as NCCL on the devices (core/parallel/nccl_collective.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moepage::ds4 {

// Which rank owns each (layer, expert).
class ExpertOwnership {
 public:
  // Expert e of every layer belongs to rank e mod ranks.
  static ExpertOwnership round_robin(uint32_t n_layers, uint32_t n_experts, uint32_t ranks);
  // owner[layer * n_experts + e] = rank; throws std::invalid_argument naming the first entry that
  // is not below `ranks`, or a table of the wrong size.
  ExpertOwnership(uint32_t n_layers, uint32_t n_experts, uint32_t ranks, std::vector<uint32_t> owner);

  uint32_t ranks() const { return ranks_; }
  uint32_t n_layers() const { return n_layers_; }
  uint32_t n_experts() const { return n_experts_; }
  uint32_t owner(uint32_t layer, uint32_t expert) const { return owner_[size_t(layer) * n_experts_ + expert]; }
  // How many experts of `layer` the rank owns.
  uint32_t owned(uint32_t layer, uint32_t rank) const;

 private:
  uint32_t n_layers_ = 0, n_experts_ = 0, ranks_ = 1;
  std::vector<uint32_t> owner_;
};

// One rank's view of the collective.
class Collective {
 public:
  virtual ~Collective() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  // data[0..n) = the sum over ranks of every rank's data[0..n), added in rank order (so every
  // rank gets the same bits). Throws std::runtime_error when another rank failed.
  virtual void all_reduce_sum(float* data, uint64_t n) = 0;
  // Whether all_reduce_sum_device is offered (a GPU rank otherwise stages through host memory).
  virtual bool reduces_on_device() const { return false; }
  // data[0..n) in this rank's device memory = the sum over ranks, queued on `stream` (the rank's
  // native stream). Throws std::runtime_error when the collective fails or has no device sum.
  virtual void all_reduce_sum_device(float* data, uint64_t n, void* stream);
  // This rank failed: every rank blocked in (or later entering) the collective throws instead of
  // waiting for it forever.
  virtual void abort(const std::string& why) = 0;
};

// What the MoE block needs to run as one rank.
struct ExpertParallel {
  const ExpertOwnership* ownership = nullptr;
  Collective* collective = nullptr;
  uint32_t rank = 0;
};

}  // namespace moepage::ds4
