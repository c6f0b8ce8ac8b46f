#include "gpu_binding.hpp"

#include <stdexcept>
#include <string>

#include "deepseek4/forward/bind_weights.hpp"

namespace moepage::ds4 {

GpuBinding::GpuBinding(const mp_host_api* host, PagerCalls& pager, const LoadedCheckpoint& model,
                       uint32_t max_context, uint32_t max_batch)
    : device_(host ? host->device : nullptr) {
  if (device_ == nullptr || device_->kind != MP_DEVICE_HIP || device_->stream_create == nullptr ||
      device_->stream_destroy == nullptr)
    throw std::runtime_error("arch 'deepseek4': the GPU forward pass needs the host's HIP device service with streams");
  if (const mp_status s = device_->stream_create(device_->ctx, &stream_); s != MP_OK)
    throw std::runtime_error(std::string("arch 'deepseek4': creating the compute stream failed: ") + mp_status_name(s));
  try {
    source_ = std::make_unique<GpuPagerExpertSource>(pager);
    model_ = std::make_unique<gpu::GpuModel>(model.config, model.weights, expert_layout(*model.catalog, model.config),
                                             source_.get(), static_cast<gpu::Stream>(stream_),
                                             ModelOptions{max_context, max_batch});
  } catch (...) {
    model_.reset();
    (void)device_->stream_destroy(device_->ctx, stream_);
    throw;
  }
}

GpuBinding::~GpuBinding() {
  model_.reset();  // waits for its stream, then frees its memory
  source_.reset();
  (void)device_->stream_destroy(device_->ctx, stream_);
}

}  // namespace moepage::ds4
