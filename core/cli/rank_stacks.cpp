#include "cli/rank_stacks.hpp"

#include "parallel/partition_table.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

namespace moepage::cli {

struct RankStacks::Call {
  enum Kind { Reset, Forward, Greedy } kind;
  std::span<const int32_t> tokens;
  float* logits = nullptr;  // rank 0's
  uint32_t flags = 0;
  RankStacks* self = nullptr;
};

std::string ranks_key(const profile::ParallelSettings& settings) {
  return "parallel.ranks" + (settings.ranks_where.empty() ? "" : " (" + settings.ranks_where + ")");
}

RankStacks::RankStacks(ResolvedStack& resolved, const RankDevices& devices, const profile::ParallelSettings& settings,
                       const std::string& key) {
  const uint32_t ranks = settings.ranks;
  const auto start = std::chrono::steady_clock::now();
  if (ranks < 2) throw std::invalid_argument(key + ": a rank group needs 2 or more ranks");
  group_ = std::make_unique<parallel::LocalGroup>(ranks);
  group_->attach_device(devices.collective());
  for (uint32_t r = 0; r < ranks; ++r) {
    ranks_.push_back(std::make_unique<Rank>());
    if (r == 0) {
      // The first architecture tells the geometry the partition needs; its own join follows.
      const host::LoadedComponent& arch = *resolved.arch.component;
      mp_arch_create_args args{sizeof(mp_arch_create_args), devices.host(0), resolved.arch.options.c_options(),
                               resolved.model_dir.c_str()};
      ranks_[0]->stack.arch = mp::ArchHandle::create(*arch.descriptor, arch.library, args);
      if (!ranks_[0]->stack.arch.has_join_ranks())
        throw std::invalid_argument(key + ": arch '" + arch.name() +
                                    "' cannot run as several ranks (it has no join_ranks, plugin ABI 1.7)");
      info_ = ranks_[0]->stack.arch.describe();
      catalog_ = ranks_[0]->stack.arch.expert_catalog();
      make_partition(settings, key);
    }
    create_rank(resolved, devices.host(r), r);
  }
  for (auto& rank : ranks_) rank->logits.resize(info_.vocab_size);
  workers_ = std::make_unique<RankWorkers>(ranks);
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

RankStacks::~RankStacks() { shutdown(); }

void RankStacks::make_partition(const profile::ParallelSettings& settings, const std::string& key) {
  // Too many ranks is the ranks' error whatever the partition.
  auto p = parallel::ExpertPartition::round_robin(catalog_->n_layers, catalog_->n_experts, settings.ranks, key);
  if (settings.partition == "table")
    p = parallel::read_partition_table(settings.partition_table, catalog_->n_layers, catalog_->n_experts,
                                       settings.ranks, "parallel.partition_table (" + settings.table_where + ")");
  partition_ = std::make_unique<parallel::ExpertPartition>(std::move(p));
}

void RankStacks::shutdown() noexcept {
  workers_.reset();
  for (auto& rank : ranks_) rank->stack.shutdown();
}

// Rank r: its architecture (rank 0's exists already), joined to the group; then its transport and
// its pager over the rank's catalog; then the architecture bound to the pager through the
// translating ref.
void RankStacks::create_rank(ResolvedStack& resolved, const mp_host_api* host, uint32_t r) {
  Rank& rank = *ranks_[r];
  host::PluginStack& stack = rank.stack;
  try {
    const host::LoadedComponent& arch = *resolved.arch.component;
    if (r > 0) {
      mp_arch_create_args args{sizeof(mp_arch_create_args), host, resolved.arch.options.c_options(),
                               resolved.model_dir.c_str()};
      stack.arch = mp::ArchHandle::create(*arch.descriptor, arch.library, args);
    }
    const mp_expert_catalog* full = stack.arch.expert_catalog();
    if (full->n_layers != catalog_->n_layers || full->n_experts != catalog_->n_experts)
      throw std::runtime_error("its architecture describes another geometry than rank 0's");
    const mp_expert_parallel group{sizeof(mp_expert_parallel), partition_->n_layers(), partition_->n_experts(),
                                   partition_->table().data(), &group_->rank(r)};
    stack.arch.join_ranks(group);
    rank.catalog = std::make_unique<parallel::RankCatalog>(*full, *partition_, r);
    const host::LoadedComponent& transport = *resolved.transport.component;
    stack.transport = mp::TransportHandle::create(*transport.descriptor, transport.library, host,
                                                  resolved.transport.options.c_options());
    const host::LoadedComponent& pager = *resolved.pager.component;
    mp_pager_create_args pager_args{sizeof(mp_pager_create_args),
                                    host,
                                    resolved.pager.options.c_options(),
                                    &rank.catalog->abi(),
                                    stack.transport.ref(),
                                    info_.dense_bytes};
    stack.pager = mp::PagerHandle::create(*pager.descriptor, pager.library, pager_args);
    rank.pager_ref = std::make_unique<parallel::RankPagerRef>(stack.pager.ref(), *rank.catalog, *partition_);
    stack.arch.bind_pager(rank.pager_ref->ref());
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(r) + " of " + std::to_string(group_->size()) + ": " + e.what());
  }
}

void RankStacks::run(Call& call) {
  call.self = this;
  workers_->run(
      [](void* ctx, uint32_t r) {
        Call& c = *static_cast<Call*>(ctx);
        RankStacks& s = *c.self;
        Rank& rank = *s.ranks_[r];
        try {
          if (c.kind == Call::Reset) rank.stack.arch.reset_sequence();
          else if (c.kind == Call::Greedy) rank.next = rank.stack.arch.forward_greedy(c.tokens);
          else rank.stack.arch.forward(c.tokens, r == 0 ? c.logits : rank.logits.data(), c.flags);
        } catch (const std::exception& e) {
          // A rank that fails outside the collective must not leave the others waiting in it (one
          // that failed inside aborted it already: the first reason stays).
          s.group_->abort("rank " + std::to_string(r) + " failed: " + e.what());
          throw;
        }
      },
      &call);
  const auto& errors = workers_->errors();
  if (std::none_of(errors.begin(), errors.end(), [](const std::exception_ptr& e) { return e != nullptr; })) return;
  // The group's reason names the rank that failed first; the others only saw its abort.
  if (group_->aborted()) throw std::runtime_error(group_->abort_reason());
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

void RankStacks::reset_sequence() {
  Call c{Call::Reset, {}, nullptr, 0, this};
  run(c);
}

void RankStacks::forward(std::span<const int32_t> tokens, float* logits, uint32_t flags) {
  const size_t rows = flags == MP_FORWARD_ALL_LOGITS ? tokens.size() : 1;
  for (size_t r = 1; r < ranks_.size(); ++r)
    if (ranks_[r]->logits.size() < rows * info_.vocab_size) ranks_[r]->logits.resize(rows * info_.vocab_size);
  Call c{Call::Forward, tokens, logits, flags, this};
  run(c);
}

bool RankStacks::has_forward_greedy() const { return ranks_[0]->stack.arch.has_forward_greedy(); }

int32_t RankStacks::forward_greedy(std::span<const int32_t> tokens) {
  Call c{Call::Greedy, tokens, nullptr, 0, this};
  run(c);
  // Every rank continued from the same all-reduced bits, so every rank picks the same token.
  for (size_t r = 1; r < ranks_.size(); ++r)
    if (ranks_[r]->next != ranks_[0]->next)
      throw std::runtime_error("rank " + std::to_string(r) + " picked token " + std::to_string(ranks_[r]->next) +
                               ", rank 0 " + std::to_string(ranks_[0]->next) + ": the ranks diverged");
  return ranks_[0]->next;
}

std::optional<mp_arch_stats> RankStacks::slowest_arch_stats() {
  std::optional<mp_arch_stats> slowest;
  uint64_t collective_calls = 0, collective_ns = 0;
  for (auto& rank : ranks_) {
    const auto s = rank->stack.arch.stats();
    if (!s) continue;
    if (!slowest || s->routed_ns > slowest->routed_ns) slowest = s;
    if (s->collective_ns >= collective_ns) {
      collective_ns = s->collective_ns;
      collective_calls = s->collective_calls;
    }
  }
  if (slowest) {
    slowest->collective_calls = collective_calls;
    slowest->collective_ns = collective_ns;
  }
  return slowest;
}

}  // namespace moepage::cli
