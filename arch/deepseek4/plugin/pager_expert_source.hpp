// The forward pass's ExpertSource served by a pager plugin through the C ABI.
//
// acquire(layer, ids) calls the pager's acquire() and waits on its ready event (the CPU forward
// runs on the host, so "ready" must mean ready now). Slot bases come back from the pager; the
// parts inside a slot sit at the catalog's part offsets, which is exactly the ExpertLayout that
// expert_layout(catalog) builds, so the slot pointers are handed to the forward pass unchanged.
//
// max_batch(): how many distinct experts one acquire() may ask for. The forward pass fetches a
// layer's experts in bands of this size and is done with a band's slots before it asks for the
// next band, so a band may reuse (evict) the slots of the previous one. A resident pager (or one
// whose pool holds every expert) serves all experts at once; a paged pool serves at most its
// slots per layer, which the pager guarantees to be >= top_k (below top_k is a load error).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "deepseek4/forward/expert_source.hpp"
#include "moepage/moepage.h"

namespace moepage::ds4 {

class PagerExpertSource final : public ExpertSource {
 public:
  // Reads the pager's stats once to size the band. Throws std::runtime_error naming the pager
  // call that failed.
  PagerExpertSource(const mp_host_api* host, const mp_pager_ref& pager, uint32_t n_experts, uint32_t top_k);

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) override;
  uint32_t max_batch() const override { return band_; }
  // Forwards to the pager's observe() when it has one (a predictor stages layer + 1).
  void observe(uint32_t layer, const float* hidden, uint32_t d) override;

  // Pass-throughs the plugin uses around a forward call; hint() does nothing when the pager has
  // no hint callback.
  void begin_token(uint64_t token);
  void hint(uint32_t layer, const std::vector<int32_t>& experts);

 private:
  [[noreturn]] void fail(const char* call, mp_status status) const;

  const mp_host_api* host_;
  mp_pager_ref pager_;
  uint32_t band_ = 0;
  std::vector<void*> raw_slots_;
};

}  // namespace moepage::ds4
