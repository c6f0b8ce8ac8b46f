// The pager's C calls as deepseek4 uses them, shared by the CPU and GPU expert sources and the
// plugin: status codes become exceptions (mp::Error, keeping the status) naming the call and
// carrying the pager's message.
//
// band(): how many distinct experts one acquire() may ask for. The forward pass fetches a layer's
// experts in bands of this size and is done with a band's slots before it asks for the next band,
// so a band may reuse (evict) the slots of the previous one. A resident pager (or one whose pool
// holds every expert) serves all experts at once; a paged pool serves at most its slots per
// layer, which the pager guarantees to be >= top_k (below top_k is a load error).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "moepage/moepage.h"

namespace moepage::ds4 {

class PagerCalls {
 public:
  // Reads the pager's stats once to size the band. Throws std::runtime_error naming the pager
  // call that failed.
  PagerCalls(const mp_host_api* host, const mp_pager_ref& pager, uint32_t n_experts, uint32_t top_k);

  uint32_t band() const { return band_; }
  const mp_host_api* host() const { return host_; }

  // slots[i] receives the slot base of experts[i] (parts at the catalog's part offsets, which is
  // the ExpertLayout expert_layout(catalog) builds). Returns the event the slots are ready at
  // (NULL when nothing is in flight).
  mp_event acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots);
  // Forwards to the pager's observe() when it has one (a predictor stages layer + 1).
  void observe(uint32_t layer, const float* hidden, uint32_t d, mp_stream stream);
  void begin_token(uint64_t token);
  // Does nothing when the pager has no hint callback.
  void hint(uint32_t layer, const std::vector<int32_t>& experts);

 private:
  [[noreturn]] void fail(const char* call, mp_status status) const;

  const mp_host_api* host_;
  mp_pager_ref pager_;
  uint32_t band_ = 0;
  std::vector<void*> raw_slots_;
};

}  // namespace moepage::ds4
