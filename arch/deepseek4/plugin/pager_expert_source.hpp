// The CPU forward pass's ExpertSource served by a pager plugin through the C ABI.
//
// acquire(layer, ids) calls the pager's acquire() and waits on its ready event on the host (the
// CPU forward runs on the host, so "ready" must mean ready now). Slot pointers go to the forward
// pass unchanged; bands and errors as pager_calls.hpp says.
#pragma once
#include <cstdint>

#include "deepseek4/forward/expert_source.hpp"
#include "pager_calls.hpp"

namespace moepage::ds4 {

class PagerExpertSource final : public ExpertSource {
 public:
  explicit PagerExpertSource(PagerCalls& pager) : pager_(pager) {}

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) override;
  uint32_t max_batch() const override { return pager_.band(); }
  void observe(uint32_t layer, const float* hidden, uint32_t d) override { pager_.observe(layer, hidden, d, nullptr); }
  void stage(uint32_t layer, std::span<const int32_t> experts) override { pager_.stage(layer, experts); }

 private:
  PagerCalls& pager_;
};

}  // namespace moepage::ds4
