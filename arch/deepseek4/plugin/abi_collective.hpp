// One rank of an expert-parallel group as the host hands it across the ABI (mp_expert_parallel,
// ABI 1.7): the ownership table copied into an ExpertOwnership and the host's mp_collective
// behind the forward pass's Collective interface, so the model runs unchanged whether the ranks
// sum on the host or, for GPU ranks, through a library such as NCCL (ABI 1.9's device sum).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "deepseek4/forward/expert_parallel.hpp"
#include "deepseek4/model/config.hpp"
#include "moepage/moepage.h"

namespace moepage::ds4 {

// Collective over the host's mp_collective; failures (another rank aborted) throw
// std::runtime_error with the host's message.
class AbiCollective final : public Collective {
 public:
  // Copies what the host's table holds (a 1.7 host's is shorter: the fields past it read NULL).
  explicit AbiCollective(const mp_collective& c) {
    (void)mp_read_struct(&c_, sizeof c_, &c, offsetof(mp_collective, all_reduce_sum_f32_device));
  }
  uint32_t rank() const override { return c_.rank; }
  uint32_t size() const override { return c_.size; }
  void all_reduce_sum(float* data, uint64_t n) override;
  // ABI 1.9's all_reduce_sum_f32_device, when the host's table has it.
  bool reduces_on_device() const override { return c_.all_reduce_sum_f32_device != nullptr; }
  void all_reduce_sum_device(float* data, uint64_t n, void* stream) override;
  void abort(const std::string& why) override { c_.abort(c_.ctx, why.c_str()); }

 private:
  mp_collective c_{};
};

// What join_ranks keeps: the ownership, the collective and the view the model takes.
class JoinedRanks {
 public:
  // Throws mp::Error (MP_ERR_INVALID_ARG) naming the field when the group does not fit the model.
  JoinedRanks(const mp_expert_parallel& group, const Config& config);
  ExpertParallel view() { return ExpertParallel{&ownership_, &collective_, collective_.rank()}; }

 private:
  ExpertOwnership ownership_;
  AbiCollective collective_;
};

}  // namespace moepage::ds4
