// How routed experts reach the GPU forward pass: the twin of forward/expert_source.hpp, with
// device slots and a stream. acquire() returns device pointers to expert slots (layout as
// ExpertLayout says) and makes `stream` wait until their bytes are there, without blocking the
// host when nothing missed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

// A predictor of layer l + 1's experts whose scores are linear in the state observe(l) would get:
// scores = b (a h) + bias (the pager's, ABI 1.10; host arrays valid for the source's life).
struct LinearPredictor {
  uint32_t rank = 0, d_model = 0, n_experts = 0;
  const float* a = nullptr;     // [rank][d_model]
  const float* b = nullptr;     // [n_experts][rank]
  const float* bias = nullptr;  // [n_experts], or null
};

struct GpuExpertSource {
  virtual ~GpuExpertSource() = default;
  // slots[i] (host array) receives the device slot of experts[i]; valid until the next acquire()
  // of the same layer. `stream` waits for pending fills.
  virtual void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, Stream stream) = 0;
  // The split acquire, so that experts whose bytes are there are computed while the others are
  // read: slots[i] for every expert, pending[i] = 1 for each whose bytes may still be on their way
  // (acquire_await makes `stream` wait for expert `index`'s bytes before its kernels). The
  // default is acquire() with nothing pending. acquire_finish returns once every read landed and
  // throws when one failed (what was computed from the slots must then be discarded).
  virtual void acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
                             uint8_t* pending, Stream stream) {
    acquire(layer, experts, n, slots, stream);
    for (uint32_t i = 0; i < n; ++i) pending[i] = 0;
  }
  virtual void acquire_await(uint32_t /*layer*/, uint32_t /*index*/, Stream /*stream*/) {}
  // A band's experts are all launched (every pending one awaited); its acquire_finish follows now
  // or, for a step's last band of a layer under ModelOptions::defer_acquire_finish (not on an
  // expert-parallel rank), once the step's last layer is queued: between the two the source may see
  // other layers' acquires and hints, never this layer's next acquire_start.
  virtual void experts_launched(uint32_t /*layer*/) {}
  virtual void acquire_finish(uint32_t /*layer*/) {}
  virtual uint32_t max_batch() const = 0;
  // After a layer: the predictor's view (mean of the streams of the batch's last token), device
  // memory, d floats, ready once `stream` reaches this point.
  virtual void observe(uint32_t /*layer*/, const float* /*hidden_device*/, uint32_t /*d*/, Stream /*stream*/) {}
  // A predictor the forward may evaluate on the device instead of handing over the state: fills p
  // and returns true when observe(layer) would score layer + 1 so; the forward then calls
  // observe_scores(layer, scores on the host, n_experts) in place of observe(layer).
  virtual bool linear_predictor(uint32_t /*layer*/, LinearPredictor& /*p*/) { return false; }
  virtual void observe_scores(uint32_t /*layer*/, const float* /*scores*/, uint32_t /*n*/) {}
  // Before a prompt chunk's layer: the experts its first band will ask for (forward/prompt_band.hpp),
  // for a pager to start copying while the attention runs. Advice only. Default: nothing to stage.
  virtual void stage(uint32_t /*layer*/, std::span<const int32_t> /*experts*/) {}
  // Slots that never move (a resident pager): slots[e] (host array of n = the layer's experts)
  // receives every expert's device slot, and true; false when they may move. With them the
  // forward routes a decode step on the device and calls account() afterwards instead of
  // acquiring before the layer's kernels.
  virtual bool fixed_slots(uint32_t /*layer*/, const std::byte** /*slots*/, uint32_t /*n*/) { return false; }
  // The distinct experts (ascending) a step routed on the device used in `layer`, once the step is
  // done, for the source's counts and traces. Only called after fixed_slots returned true.
  virtual void account(uint32_t /*layer*/, const int32_t* /*experts*/, uint32_t /*n*/) {}
  // Slots looked up on the device (ModelOptions::slot_table, slot_table.hpp), for a source whose
  // slots move. allows_slot_lookup: whether the pager hears of a layer only through the calls the
  // forward makes naming it (no predictor reading the state). residency: the layer's experts valid
  // in their slots now (slots[e], or null), written when slots is non-null (n = the layer's
  // experts), and a generation that changes whenever they do; false when the source cannot say.
  // A looked-up layer that missed is acquired through the split acquire above, its waits on the
  // stream the reply to the device goes on; residency during that acquire reports what it evicted.
  virtual bool allows_slot_lookup() const { return false; }
  virtual bool residency(uint32_t /*layer*/, const std::byte** /*slots*/, uint32_t /*n*/, uint64_t& /*generation*/) {
    return false;
  }
  // A looked-up layer whose experts all hit: the plain acquire the source counts and traces them
  // by, once the device has used them; the slots must be `expected` with nothing in flight.
  virtual void account_hits(uint32_t /*layer*/, const int32_t* /*experts*/, uint32_t /*n*/,
                            const std::byte* const* /*expected*/) {}
};

}  // namespace moepage::ds4::gpu
