#include "abi_collective.hpp"

#include <stdexcept>
#include <vector>

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::ds4 {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw mp::Error(MP_ERR_INVALID_ARG, "arch 'deepseek4': join_ranks: " + what);
}

// The collective's fields, checked before anything keeps them.
const mp_collective& checked_collective(const mp_expert_parallel& group) {
  const mp_collective* c = group.collective;
  if (c == nullptr) bad("no collective");
  if (!MP_HAS_FIELD(c, mp_collective, last_error) || c->all_reduce_sum_f32 == nullptr || c->abort == nullptr ||
      c->last_error == nullptr)
    bad("the collective lacks all_reduce_sum_f32, abort or last_error");
  if (c->size == 0 || c->rank >= c->size)
    bad("rank " + std::to_string(c->rank) + " of " + std::to_string(c->size) + " ranks");
  return *c;
}

ExpertOwnership checked_ownership(const mp_expert_parallel& group, const Config& config, uint32_t ranks) {
  if (group.n_layers != config.num_hidden_layers || group.n_experts != config.n_routed_experts)
    bad("the ownership covers " + std::to_string(group.n_layers) + " layers of " + std::to_string(group.n_experts) +
        " experts, the model has " + std::to_string(config.num_hidden_layers) + " of " +
        std::to_string(config.n_routed_experts));
  if (group.owner == nullptr) bad("no ownership table");
  std::vector<uint32_t> owner(group.owner, group.owner + size_t(group.n_layers) * group.n_experts);
  try {
    return ExpertOwnership(group.n_layers, group.n_experts, ranks, std::move(owner));
  } catch (const std::invalid_argument& e) {
    bad(e.what());
  }
}

}  // namespace

void AbiCollective::all_reduce_sum(float* data, uint64_t n) {
  if (c_.all_reduce_sum_f32(c_.ctx, data, n) != MP_OK) throw std::runtime_error(c_.last_error(c_.ctx));
}

void AbiCollective::all_reduce_sum_device(float* data, uint64_t n, void* stream) {
  if (!reduces_on_device()) return Collective::all_reduce_sum_device(data, n, stream);  // throws
  if (c_.all_reduce_sum_f32_device(c_.ctx, data, n, static_cast<mp_stream>(stream)) != MP_OK)
    throw std::runtime_error(c_.last_error(c_.ctx));
}

JoinedRanks::JoinedRanks(const mp_expert_parallel& group, const Config& config)
    : ownership_(checked_ownership(group, config, checked_collective(group).size)), collective_(*group.collective) {}

}  // namespace moepage::ds4
