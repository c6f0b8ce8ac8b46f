// How routed experts reach the forward pass: a pager (or, in tests, ResidentExpertSource) hands
// out one slot per expert; ExpertLayout says where w1, w3, w2 and their scales sit inside a slot.
// The forward pass reads expert bytes through these slots and nothing else.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dtype/dtype.hpp"

namespace moepage::ds4 {

struct ExpertSource {
  virtual ~ExpertSource() = default;
  // slots[i] receives the slot of experts[i] of `layer`. The slots stay valid until the next
  // acquire() call. The forward pass asks for at most `max_batch()` experts per call.
  virtual void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) = 0;
  // The most experts one acquire() may ask for (at least num_experts_per_tok).
  virtual uint32_t max_batch() const = 0;
  // Called once a layer is complete, with the hidden state a predictor of the next layer's
  // routing sees: the mean of the hc_mult residual streams of the batch's last token (d floats,
  // valid only during the call). Default: nobody is listening.
  virtual void observe(uint32_t /*layer*/, const float* /*hidden*/, uint32_t /*d*/) {}
  // Before a prompt chunk's layer: the experts its first band will ask for (prompt_band.hpp), for
  // a pager to start reading while the attention runs. Advice only. Default: nothing to stage.
  virtual void stage(uint32_t /*layer*/, std::span<const int32_t> /*experts*/) {}
};

struct ExpertPart {
  Dtype dtype = Dtype::F32;   // F32, BF16, F16, F8_E4M3 (+ 128x128 scale) or I8 (FP4 + per-32 scale)
  uint64_t offset = 0;        // weight bytes from the start of the slot
  uint64_t scale_offset = 0;  // e8m0 scale bytes from the start of the slot
  bool has_scale = false;
};

struct ExpertLayout {
  uint32_t hidden = 0;        // D: input of w1/w3, output of w2
  uint32_t intermediate = 0;  // moe_intermediate_size
  ExpertPart w1, w3, w2;      // w1/w3: [intermediate, hidden]; w2: [hidden, intermediate]
  uint64_t slot_bytes = 0;

  // Bytes of one part's weight and of its scale for a logical [rows, cols] matrix.
  static uint64_t weight_bytes(Dtype dtype, uint64_t rows, uint64_t cols);
  static uint64_t scale_bytes(Dtype dtype, uint64_t rows, uint64_t cols);
  // A packed layout: w1, w1.scale, w3, w3.scale, w2, w2.scale back to back, 64-byte aligned.
  static ExpertLayout packed(uint32_t hidden, uint32_t intermediate, Dtype w13, Dtype w2);
};

// Every expert of every layer held in memory; for tests and for models that fit.
class ResidentExpertSource final : public ExpertSource {
 public:
  ResidentExpertSource(ExpertLayout layout, uint32_t n_layers, uint32_t n_experts);
  // The writable slot of (layer, expert), layout.slot_bytes long.
  std::byte* slot(uint32_t layer, uint32_t expert);
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) override;
  uint32_t max_batch() const override { return n_experts_; }
  const ExpertLayout& layout() const { return layout_; }
  uint64_t acquired() const { return acquired_; }  // experts handed out so far

 private:
  ExpertLayout layout_;
  uint32_t n_layers_, n_experts_;
  std::vector<std::byte> bytes_;
  uint64_t acquired_ = 0;
};

}  // namespace moepage::ds4
