// ModelOptions::observe_after_attention: the expert source's observe() comes after the next
// layer's attention is launched, on a stream that waits for the predictor's state alone. The
// source must see the same states, bit for bit, in the same order as when observe() comes first,
// on a stream other than the model's; the logits do not change.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "deepseek4/hip/device_arena.hpp"
#include "gpu_resident_source.hpp"
#include "tiny_gpu_run.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::test;

namespace {

// The resident experts, reading back every state observe() is handed the way a predictor does:
// wait for the stream it was given, then copy.
class ObservingSource final : public gpu::GpuExpertSource {
 public:
  ObservingSource(GpuResidentExpertSource& resident, uint32_t n_experts) : resident_(resident), n_experts_(n_experts) {}

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
               gpu::Stream stream) override {
    resident_.acquire(layer, experts, n, slots, stream);
  }
  uint32_t max_batch() const override { return n_experts_; }
  void observe(uint32_t layer, const float* hidden_device, uint32_t d, gpu::Stream stream) override {
    gpu::synchronize(stream);
    std::vector<float> state(d);
    gpu::download(state.data(), hidden_device, uint64_t(d) * sizeof(float));
    layers_.push_back(layer);
    states_.push_back(std::move(state));
    streams_.push_back(stream);
  }

  const std::vector<uint32_t>& layers() const { return layers_; }
  const std::vector<std::vector<float>>& states() const { return states_; }
  const std::vector<gpu::Stream>& streams() const { return streams_; }

 private:
  GpuResidentExpertSource& resident_;
  uint32_t n_experts_;
  std::vector<uint32_t> layers_;
  std::vector<std::vector<float>> states_;
  std::vector<gpu::Stream> streams_;
};

}  // namespace

TEST_CASE("observe after the attention's launch sees the same states as before it, on a stream of its own") {
  Tiny t;
  const uint32_t E = t.cfg.n_routed_experts, L = t.cfg.num_hidden_layers;
  ObservingSource early(t.experts, E), late(t.experts, E);
  const auto reference = run(t, early, true, true, false);
  const auto got = run(t, late, true, true, true);
  CHECK(bitwise_equal(got, reference));
  // One observe per layer for the prompt's batch and each decode step.
  REQUIRE(early.layers().size() == size_t(L) * (1 + kSteps));
  REQUIRE(late.layers() == early.layers());
  REQUIRE(late.states().size() == early.states().size());
  size_t differing = 0, off_main = 0;
  for (size_t i = 0; i < early.states().size(); ++i) {
    differing += late.states()[i] != early.states()[i] ? 1 : 0;
    CHECK(early.streams()[i] == t.stream.stream);
    // Every layer's but the last, which is observed at the head, after the loop.
    if (early.layers()[i] + 1 < L) off_main += late.streams()[i] != t.stream.stream ? 1 : 0;
  }
  CHECK(differing == 0);
  CHECK(off_main == size_t(L - 1) * (1 + kSteps));
}
