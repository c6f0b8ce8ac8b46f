// Every routed expert in device memory: the GPU twin of ResidentExpertSource for tests. Built from
// a host ResidentExpertSource (same slot layout); counts what the forward pass asks of it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/hip/device_arena.hpp"
#include "deepseek4/hip/expert_source.hpp"

namespace moepage::ds4::test {

class GpuResidentExpertSource final : public gpu::GpuExpertSource {
 public:
  GpuResidentExpertSource(ResidentExpertSource& host, uint32_t n_layers, uint32_t n_experts)
      : slot_bytes_(host.layout().slot_bytes), n_layers_(n_layers), n_experts_(n_experts) {
    base_ = static_cast<std::byte*>(arena_.take_bytes(uint64_t(n_layers) * n_experts * slot_bytes_));
    for (uint32_t l = 0; l < n_layers; ++l)
      for (uint32_t e = 0; e < n_experts; ++e) gpu::upload(slot(l, e), host.slot(l, e), slot_bytes_);
  }

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, gpu::Stream) override {
    for (uint32_t i = 0; i < n; ++i) {
      if (layer >= n_layers_ || experts[i] < 0 || uint32_t(experts[i]) >= n_experts_)
        throw std::out_of_range("gpu resident experts: layer " + std::to_string(layer) + " expert " +
                                std::to_string(experts[i]) + " does not exist");
      slots[i] = slot(layer, uint32_t(experts[i]));
    }
    acquired_ += n;
  }
  uint32_t max_batch() const override { return n_experts_; }
  void observe(uint32_t, const float* hidden_device, uint32_t, gpu::Stream) override {
    if (hidden_device != nullptr) ++observed_;
  }

  // Expert `expert`'s slot of `layer`, asking nothing of the counters.
  const std::byte* slot_at(uint32_t layer, uint32_t expert) const { return slot(layer, expert); }
  uint64_t acquired() const { return acquired_; }
  uint64_t observed() const { return observed_; }

 private:
  std::byte* slot(uint32_t layer, uint32_t expert) const {
    return base_ + (uint64_t(layer) * n_experts_ + expert) * slot_bytes_;
  }

  gpu::DeviceArena arena_{gpu::DeviceArena::Kind::Device};
  uint64_t slot_bytes_;
  uint32_t n_layers_, n_experts_;
  std::byte* base_ = nullptr;
  uint64_t acquired_ = 0, observed_ = 0;
};

// A compute stream for one test, destroyed at scope exit.
struct TestStream {
  gpu::Stream stream = gpu::create_stream();
  TestStream() = default;
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  ~TestStream() { gpu::destroy_stream(stream); }
};

}  // namespace moepage::ds4::test
