// The GPU forward pass's expert source served by a pager plugin through the C ABI.
//
// acquire(layer, ids, stream) calls the pager's acquire(); a ready event makes the compute stream
// wait for it on the device (the device service's stream_wait_event, the compute stream being an
// mp_stream: on a HIP device both are the native stream), so the host never blocks on a fill.
// Slot pointers are device memory and go to the forward pass unchanged. observe() hands the
// pager the device pointer and the stream it was written on. Bands and errors: pager_calls.hpp.
#pragma once
#include <cstdint>

#include "deepseek4/hip/expert_source.hpp"
#include "pager_calls.hpp"

namespace moepage::ds4 {

class GpuPagerExpertSource final : public gpu::GpuExpertSource {
 public:
  // Throws std::runtime_error when the host's device service cannot order a stream on an event.
  explicit GpuPagerExpertSource(PagerCalls& pager);

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
               gpu::Stream stream) override;
  uint32_t max_batch() const override { return pager_.band(); }
  void observe(uint32_t layer, const float* hidden_device, uint32_t d, gpu::Stream stream) override;

 private:
  PagerCalls& pager_;
  const mp_device_service* device_;
};

}  // namespace moepage::ds4
