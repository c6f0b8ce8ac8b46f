// A pager's linear predictor evaluated on the GPU (ModelOptions::predictor_on_device): after layer
// l the next layer's scores b (a h) + bias are two single-token products on the device, and only
// the n_experts scores travel to the host, where the pager picks its prefetches from them.
//
// Why: handing over the state makes the pager wait for it, copy it back and score on the host, and
// at Flash's width a rank-128 adapter streams 2.2 MB of floats a layer there (about 0.3 ms on one
// core, bench/results/2026-12-05-adapter-scorer.md) while the GPU waits for the next layer's
// launches. On the device the same bytes take microseconds.
//
// The bias rides in the second product: b is stored with the bias as an extra column and the
// low-rank vector with a 1 in that place, so the scores need no kernel of their own. Columns are
// padded with zeros to a multiple of 64. Plain C++ (the launchers do the device work).
#pragma once
#include <cstdint>
#include <vector>

#include "deepseek4/cpu/matref.hpp"
#include "deepseek4/hip/device_arena.hpp"
#include "deepseek4/hip/expert_source.hpp"

namespace moepage::ds4::gpu {

class DevicePredictors {
 public:
  // Asks `source` for every layer's predictor and uploads those it offers. Throws
  // std::invalid_argument naming the layer when one's shape does not fit the model.
  DevicePredictors(GpuExpertSource& source, uint32_t n_layers, int64_t d_model, int64_t n_experts, DeviceArena& device,
                   DeviceArena& pinned);

  // Whether layer `layer`'s successor is scored here.
  bool has(uint32_t layer) const { return layer < layers_.size() && layers_[layer].on; }
  uint32_t count() const { return count_; }

  // Scores the layer after `layer` from `hidden` (device, d_model floats, ready once `stream`
  // reaches this point) on `stream`, waits for the scores and hands them to the source's
  // observe_scores. Only for a layer with has(layer).
  void observe(uint32_t layer, const float* hidden, Stream stream);

 private:
  struct Layer {
    bool on = false;
    cpu::MatRef a;  // [rank][d_model] floats, device
    cpu::MatRef b;  // [n_experts][padded rank] floats, device: b, then the bias column, then zeros
  };
  GpuExpertSource& source_;
  int64_t d_model_, n_experts_;
  std::vector<Layer> layers_;
  uint32_t count_ = 0;
  float* low_ = nullptr;          // device [widest padded rank]: a h, then 1 at the bias column
  float* scores_ = nullptr;       // device [n_experts]
  float* scores_host_ = nullptr;  // pinned [n_experts]
};

}  // namespace moepage::ds4::gpu
