// `parallel.ranks: N` (N > 1): N expert-parallel ranks as threads of this process. Each rank has
// its own architecture instance (the dense weights replicated: every rank loads them), its own
// transport and its own pager, created with the profile's options (so pager.budget is per rank)
// over a catalog of the rank's experts only; the architecture joins the group through ABI 1.7
// join_ranks with the host's LocalGroup collective. Every generate() call runs on all ranks at
// once (RankWorkers); they compute the same logits, and rank 0's are returned.
//
// Why threads of one process: the CPU ranks share one address space, so the all-reduce reads the
// other ranks' buffers directly and there is nothing to rendezvous (no ports, no unique ids), in
// CI as anywhere. On GPUs each rank has its own device (rank_devices.hpp), and the group's table
// also carries the device all-reduce when NCCL (RCCL) is in use.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/generate.hpp"
#include "cli/plugin_stack_loading.hpp"
#include "cli/rank_devices.hpp"
#include "cli/rank_workers.hpp"
#include "parallel/expert_partition.hpp"
#include "parallel/local_group.hpp"
#include "parallel/rank_pager.hpp"

namespace moepage::cli {

// "parallel.ranks (where it was set)": the key RankStacks' errors name.
std::string ranks_key(const profile::ParallelSettings& settings);

class RankStacks final : public Forward {
 public:
  // Creates rank 0's stack first, then the others. Throws a one-line error naming `key` (where
  // parallel.ranks was set) for too many ranks, naming parallel.partition_table for a bad table,
  // or naming the rank whose plugin failed.
  // Rank r's plugins get devices.host(r); the group carries devices.collective(), which must
  // outlive this object, as must the host apis.
  RankStacks(ResolvedStack& resolved, const RankDevices& devices, const profile::ParallelSettings& settings,
             const std::string& key);
  ~RankStacks() override;

  uint32_t ranks() const { return uint32_t(ranks_.size()); }
  const mp_model_info& info() const { return info_; }
  // The architecture's whole catalog (rank 0's instance).
  const mp_expert_catalog& catalog() const { return *catalog_; }
  double load_seconds() const { return load_seconds_; }
  mp::PagerHandle& pager(uint32_t rank) { return ranks_[rank]->stack.pager; }
  // The rank whose routed experts took longest, when the architecture times them, with the
  // collective counters of the rank whose all-reduces took longest.
  std::optional<mp_arch_stats> slowest_arch_stats();
  void shutdown() noexcept;

  void reset_sequence() override;
  void forward(std::span<const int32_t> tokens, float* logits, uint32_t flags) override;
  bool has_forward_greedy() const override;
  int32_t forward_greedy(std::span<const int32_t> tokens) override;

 private:
  // Members die in reverse order: the stack (architecture, pager, transport) before the catalog
  // its pager was created over and the ref its architecture calls through.
  struct Rank {
    std::unique_ptr<parallel::RankCatalog> catalog;
    std::unique_ptr<parallel::RankPagerRef> pager_ref;
    std::vector<float> logits;  // ranks > 0: their logits, which are rank 0's (the caller gets those)
    int32_t next = -1;
    host::PluginStack stack;
  };
  struct Call;
  void create_rank(ResolvedStack& resolved, const mp_host_api* host, uint32_t r);
  // The partition the settings ask for, over rank 0's catalog.
  void make_partition(const profile::ParallelSettings& settings, const std::string& key);
  // Runs `call` on every rank; throws the first failure (the rank that failed first, not those
  // its abort woke up).
  void run(Call& call);

  // Declared in the order they may be destroyed last to first (also when the constructor throws):
  // the workers' threads stop before the ranks go, the ranks before the group they joined.
  std::unique_ptr<parallel::ExpertPartition> partition_;
  std::unique_ptr<parallel::LocalGroup> group_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::unique_ptr<RankWorkers> workers_;
  mp_model_info info_{};
  const mp_expert_catalog* catalog_ = nullptr;
  double load_seconds_ = 0;
};

}  // namespace moepage::cli
