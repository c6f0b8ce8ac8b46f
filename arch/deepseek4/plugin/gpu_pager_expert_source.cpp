#include "gpu_pager_expert_source.hpp"

#include <stdexcept>
#include <string>

namespace moepage::ds4 {

GpuPagerExpertSource::GpuPagerExpertSource(PagerCalls& pager)
    : pager_(pager), device_(pager.host() ? pager.host()->device : nullptr) {
  if (device_ == nullptr || device_->kind != MP_DEVICE_HIP || device_->stream_wait_event == nullptr)
    throw std::runtime_error(
        "arch 'deepseek4': the GPU forward pass needs the host's HIP device service with "
        "stream_wait_event");
}

void GpuPagerExpertSource::wait_on(uint32_t layer, mp_event ready, gpu::Stream stream) const {
  if (ready == nullptr) return;
  if (const mp_status s = device_->stream_wait_event(device_->ctx, static_cast<mp_stream>(stream), ready); s != MP_OK)
    throw std::runtime_error(std::string("arch 'deepseek4': ordering the compute stream after layer ") +
                             std::to_string(layer) + "'s expert fills failed: " + mp_status_name(s));
}

void GpuPagerExpertSource::acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
                                   gpu::Stream stream) {
  wait_on(layer, pager_.acquire(layer, experts, n, slots), stream);
}

void GpuPagerExpertSource::acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
                                         uint8_t* pending, gpu::Stream stream) {
  wait_on(layer, pager_.acquire_start(layer, experts, n, slots, pending), stream);
}

void GpuPagerExpertSource::acquire_await(uint32_t layer, uint32_t index, gpu::Stream stream) {
  wait_on(layer, pager_.acquire_await(layer, index), stream);
}

bool GpuPagerExpertSource::fixed_slots(uint32_t layer, const std::byte** slots, uint32_t n) {
  if (!pager_.fixed_slots(layer, slots, n)) return false;
  if (fixed_.size() <= layer) fixed_.resize(layer + 1);
  fixed_[layer].assign(slots, slots + n);
  return true;
}

void GpuPagerExpertSource::account(uint32_t layer, const int32_t* experts, uint32_t n) {
  if (layer >= fixed_.size() || fixed_[layer].empty())
    throw std::logic_error("arch 'deepseek4': accounting layer " + std::to_string(layer) +
                           ", whose slots the pager never reported fixed");
  account_expected_.resize(n);
  for (uint32_t i = 0; i < n; ++i)  // an expert out of range expects no slot: the check below names it
    account_expected_[i] =
        experts[i] >= 0 && size_t(experts[i]) < fixed_[layer].size() ? fixed_[layer][size_t(experts[i])] : nullptr;
  acquire_as_reported(layer, experts, n, account_expected_.data(), "slots fixed");
}

void GpuPagerExpertSource::acquire_as_reported(uint32_t layer, const int32_t* experts, uint32_t n,
                                               const std::byte* const* expected, const char* reported) {
  account_slots_.resize(n);
  if (pager_.acquire(layer, experts, n, account_slots_.data()) != nullptr)
    throw std::runtime_error("arch 'deepseek4': the pager reported layer " + std::to_string(layer) + "'s " + reported +
                             ", then made an acquire of it wait for bytes");
  for (uint32_t i = 0; i < n; ++i)
    if (account_slots_[i] != expected[i])
      throw std::runtime_error("arch 'deepseek4': the pager reported layer " + std::to_string(layer) + "'s " +
                               reported + ", then moved expert " + std::to_string(experts[i]));
}

void GpuPagerExpertSource::account_hits(uint32_t layer, const int32_t* experts, uint32_t n,
                                        const std::byte* const* expected) {
  acquire_as_reported(layer, experts, n, expected, "experts valid in their slots (residency)");
}

void GpuPagerExpertSource::observe(uint32_t layer, const float* hidden_device, uint32_t d, gpu::Stream stream) {
  pager_.observe(layer, hidden_device, d, static_cast<mp_stream>(stream));
}

bool GpuPagerExpertSource::linear_predictor(uint32_t layer, gpu::LinearPredictor& p) {
  mp_linear_predictor abi{};
  if (!pager_.linear_predictor(layer, abi)) return false;
  p = gpu::LinearPredictor{abi.rank, abi.d_model, abi.n_experts, abi.a, abi.b, abi.bias};
  return true;
}

}  // namespace moepage::ds4
