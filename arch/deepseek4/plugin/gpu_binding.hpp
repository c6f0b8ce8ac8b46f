// What bind_pager builds on a HIP device (plugins built with MOEPAGE_GPU != none only): a compute
// stream from the host's device service (on MP_DEVICE_HIP an mp_stream is the native stream, so
// the model's kernels launch on it), the GPU expert source over the pager, and the GpuModel.
// Destroyed in reverse: model, source, stream.
#pragma once
#include <cstdint>
#include <memory>

#include "deepseek4/hip/gpu_model.hpp"
#include "gpu_pager_expert_source.hpp"
#include "loaded_checkpoint.hpp"
#include "pager_calls.hpp"

namespace moepage::ds4 {

class GpuBinding {
 public:
  // Throws std::runtime_error when the device service cannot create a stream, GpuError when
  // the device runs out of memory, std::invalid_argument for weights the config does not fit.
  GpuBinding(const mp_host_api* host, PagerCalls& pager, const LoadedCheckpoint& model, uint32_t max_context,
             uint32_t max_batch);
  ~GpuBinding();
  GpuBinding(const GpuBinding&) = delete;
  GpuBinding& operator=(const GpuBinding&) = delete;

  gpu::GpuModel& model() { return *model_; }

 private:
  const mp_device_service* device_;
  mp_stream stream_ = nullptr;
  std::unique_ptr<GpuPagerExpertSource> source_;
  std::unique_ptr<gpu::GpuModel> model_;
};

}  // namespace moepage::ds4
