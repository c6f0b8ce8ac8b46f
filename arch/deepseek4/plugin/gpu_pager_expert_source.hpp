// The GPU forward pass's expert source served by a pager plugin through the C ABI.
//
// acquire(layer, ids, stream) calls the pager's acquire(); a ready event makes the compute stream
// wait for it on the device (the device service's stream_wait_event, the compute stream being an
// mp_stream: on a HIP device both are the native stream), so the host never blocks on a fill.
// The split acquire (pager.h 1.5) goes to the pager's acquire_start / _await / _finish, each
// await's event ordering the stream the same way; a pager without them is served by plain acquire
// with nothing pending. Slot pointers are device memory and go to the forward pass unchanged. observe() hands the
// pager the device pointer and the stream it was written on. Bands and errors: pager_calls.hpp.
#pragma once
#include <cstdint>
#include <vector>

#include "deepseek4/hip/expert_source.hpp"
#include "pager_calls.hpp"

namespace moepage::ds4 {

class GpuPagerExpertSource final : public gpu::GpuExpertSource {
 public:
  // Throws std::runtime_error when the host's device service cannot order a stream on an event.
  explicit GpuPagerExpertSource(PagerCalls& pager);

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
               gpu::Stream stream) override;
  void acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, uint8_t* pending,
                     gpu::Stream stream) override;
  void acquire_await(uint32_t layer, uint32_t index, gpu::Stream stream) override;
  void experts_launched(uint32_t layer) override { pager_.experts_launched(layer); }
  void acquire_finish(uint32_t layer) override { pager_.acquire_finish(layer); }
  uint32_t max_batch() const override { return pager_.band(); }
  bool allows_slot_lookup() const override { return pager_.calls_name_their_layer(); }
  bool residency(uint32_t layer, const std::byte** slots, uint32_t n, uint64_t& generation) override {
    return pager_.residency(layer, slots, n, generation);
  }
  // The pager's plain acquire of experts its residency reported valid (bookkeeping only).
  void account_hits(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte* const* expected) override;
  void observe(uint32_t layer, const float* hidden_device, uint32_t d, gpu::Stream stream) override;
  bool linear_predictor(uint32_t layer, gpu::LinearPredictor& p) override;
  void observe_scores(uint32_t layer, const float* scores, uint32_t n) override {
    pager_.observe_scores(layer, scores, n);
  }
  void stage(uint32_t layer, std::span<const int32_t> experts) override { pager_.stage(layer, experts); }
  bool fixed_slots(uint32_t layer, const std::byte** slots, uint32_t n) override;
  // A plain acquire of the experts (the pager counts and traces them); its slots must be the fixed
  // ones and nothing may be in flight.
  void account(uint32_t layer, const int32_t* experts, uint32_t n) override;

 private:
  // Makes `stream` wait for `ready` on the device (NULL: nothing to wait for).
  void wait_on(uint32_t layer, mp_event ready, gpu::Stream stream) const;
  // A plain acquire of experts the pager reported in place (`reported` says how), which must return
  // `expected` with nothing to wait for: account() and account_hits().
  void acquire_as_reported(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte* const* expected,
                           const char* reported);

  PagerCalls& pager_;
  const mp_device_service* device_;
  std::vector<std::vector<const std::byte*>> fixed_;                // [layer]: fixed_slots' answer, empty if not asked
  std::vector<const std::byte*> account_slots_, account_expected_;  // scratch of acquire_as_reported()
};

}  // namespace moepage::ds4
