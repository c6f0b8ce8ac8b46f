// The GPU forward backend (built only with MOEPAGE_GPU != none): a compute stream from the host's
// device service (on MP_DEVICE_HIP an mp_stream is the native stream, so the model's kernels
// launch on it), the GPU expert source over the pager (the compute stream waits on the pager's
// ready events on the device), and the GpuModel with the dense weights copied to the device.
// Destroyed in reverse: model, source, stream. Greedy decoding picks on the device.
#include <memory>
#include <stdexcept>
#include <string>

#include "deepseek4/forward/bind_weights.hpp"
#include "deepseek4/hip/gpu_model.hpp"
#include "forward_backend.hpp"
#include "gpu_pager_expert_source.hpp"
#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::ds4 {

namespace {

class GpuBackend final : public ForwardBackend {
 public:
  // Throws std::runtime_error when the device service cannot create a stream, GpuError when
  // the device runs out of memory, std::invalid_argument for weights the config does not fit.
  explicit GpuBackend(const BackendInputs& in) : device_(in.host != nullptr ? in.host->device : nullptr) {
    if (device_ == nullptr || device_->kind != MP_DEVICE_HIP || device_->stream_create == nullptr ||
        device_->stream_destroy == nullptr)
      throw std::runtime_error(
          "arch 'deepseek4': the GPU forward pass needs the host's HIP device service with streams");
    if (const mp_status s = device_->stream_create(device_->ctx, &stream_); s != MP_OK)
      throw std::runtime_error(std::string("arch 'deepseek4': creating the compute stream failed: ") +
                               mp_status_name(s));
    try {
      const LoadedCheckpoint& m = *in.model;
      source_ = std::make_unique<GpuPagerExpertSource>(*in.pager);
      model_ = std::make_unique<gpu::GpuModel>(m.config, m.weights, expert_layout(*m.catalog, m.config), source_.get(),
                                               static_cast<gpu::Stream>(stream_),
                                               ModelOptions{in.max_context,
                                                            in.max_batch,
                                                            in.forced_routing,
                                                            in.matrix_min_tokens,
                                                            in.matrix_split,
                                                            in.matrix_expert_precision,
                                                            in.matrix_single_token,
                                                            in.matrix_min_expert_tokens,
                                                            in.device_routing,
                                                            in.expert_parallel,
                                                            in.overlap_launches,
                                                            in.gemv_stages,
                                                            in.library_min_tokens,
                                                            in.library_weight_cache_mib,
                                                            in.attention_output_parts,
                                                            in.observe_after_attention,
                                                            in.predictor_on_device,
                                                            in.timeline,
                                                            in.prompt_shared,
                                                            in.matrix_expert_stream,
                                                            in.defer_acquire_finish,
                                                            in.direct_hits,
                                                            in.run_ahead,
                                                            in.slot_table,
                                                            in.slot_reply_timeout_ms,
                                                            in.slot_queue_ahead_layers,
                                                            in.decode_shared,
                                                            in.urgent_sinkhorn});
    } catch (...) {
      model_.reset();
      (void)device_->stream_destroy(device_->ctx, stream_);
      throw;
    }
  }

  ~GpuBackend() override {
    model_.reset();  // waits for its stream, then frees its memory
    source_.reset();
    (void)device_->stream_destroy(device_->ctx, stream_);
  }
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;

  void forward(const int32_t* tokens, uint32_t n, float* logits, bool all_logits) override {
    try {
      model_->forward(tokens, n, logits, all_logits);
    } catch (const gpu::GpuError& e) {
      throw DeviceError(e.what());
    }
  }

  int32_t forward_greedy(const int32_t* tokens, uint32_t n) override {
    try {
      return model_->forward_greedy(tokens, n);
    } catch (const gpu::GpuError& e) {
      throw DeviceError(e.what());
    }
  }

  std::vector<BatchTimeline> take_timelines() override { return model_->take_timelines(); }

  void reset() override { model_->reset(); }
  uint64_t position() const override { return model_->position(); }

  // The expert kernels run asynchronously: timing them would need a sync per layer.
  void routed_stats(mp_arch_stats& out) const override {
    out.routed_experts = model_->moe_stats().routed_experts;
    out.collective_calls = model_->moe_stats().collective_calls;
    out.collective_ns = model_->moe_stats().collective_ns;
    out.slot_lookups = model_->moe_stats().slot_lookups;
    out.slot_stalls = model_->moe_stats().slot_stalls;
  }

  uint64_t dense_device_bytes() const { return model_->dense_device_bytes(); }
  uint64_t device_bytes() const { return model_->device_bytes(); }

 private:
  const mp_device_service* device_;
  mp_stream stream_ = nullptr;
  std::unique_ptr<GpuPagerExpertSource> source_;
  std::unique_ptr<gpu::GpuModel> model_;
};

}  // namespace

std::unique_ptr<ForwardBackend> make_gpu_backend(const BackendInputs& in) {
  std::unique_ptr<GpuBackend> backend;
  try {
    backend = std::make_unique<GpuBackend>(in);
  } catch (const gpu::GpuError& e) {
    throw mp::Error(MP_ERR_DEVICE, std::string("arch 'deepseek4': loading the model onto the GPU: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw mp::Error(MP_ERR_INVALID_ARG, e.what());
  }
  mp::HostLog(in.host, "deepseek4")
      .info("GPU forward pass: {} bytes of dense weights and {} bytes in all on the device",
            backend->dense_device_bytes(), backend->device_bytes());
  return backend;
}

}  // namespace moepage::ds4
