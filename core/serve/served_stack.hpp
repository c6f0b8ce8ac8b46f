// What the server generates with, built from a serving profile: one plugin stack, or with
// parallel.ranks > 1 a group of expert-parallel ranks (cli/rank_stacks.hpp), each with its own
// pager and transport and, on GPUs, its own device. The server drives either through one Forward
// and reads the pagers' counters summed over the ranks.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cli/generate.hpp"
#include "cli/plugin_stack_loading.hpp"
#include "cli/rank_stacks.hpp"
#include "profile/profile.hpp"

namespace moepage::serve {

class ServedStack {
 public:
  // Creates the stack (or the ranks); throws what `moepage run` would for the same profile.
  // `resolved` and `host` must outlive this object.
  ServedStack(cli::ResolvedStack& resolved, const profile::Profile& prof, const mp_host_api* host);
  ~ServedStack();
  ServedStack(const ServedStack&) = delete;
  ServedStack& operator=(const ServedStack&) = delete;

  cli::Forward& forward() { return *forward_; }
  const mp_model_info& info() const { return info_; }
  // The architecture's whole catalog (rank 0's with ranks).
  const mp_expert_catalog& catalog() const { return *catalog_; }
  // One pager per rank (one without ranks).
  const std::vector<mp::PagerHandle*>& pagers() const { return pagers_; }
  uint32_t ranks() const { return uint32_t(pagers_.size()); }

 private:
  // Declared so that they go in reverse: the forward before what it drives, the ranks before the
  // devices (and collective) they run on.
  std::optional<cli::LoadedStack> one_;
  std::unique_ptr<cli::RankDevices> devices_;
  std::unique_ptr<cli::RankStacks> ranks_;
  std::unique_ptr<cli::ArchForward> arch_forward_;  // one stack's
  cli::Forward* forward_ = nullptr;                 // arch_forward_ or ranks_
  mp_model_info info_{};
  const mp_expert_catalog* catalog_ = nullptr;
  std::vector<mp::PagerHandle*> pagers_;
};

}  // namespace moepage::serve
