// ModelOptions::predictor_on_device: where the expert source offers a linear predictor of the next
// layer, the model scores it on the device and hands over only the scores (observe_scores), and
// the state otherwise (observe). The scores must be the predictor's b (a h) + bias of the very
// state the source would have been handed, each layer in the same order, and the logits must not
// change.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "deepseek4/hip/device_arena.hpp"
#include "gpu_resident_source.hpp"
#include "tiny_gpu_run.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::test;

namespace {

constexpr uint32_t kRank = 8;

// The resident experts and a random rank-8 predictor after every odd layer (the even ones are
// handed the state, so both paths run in one forward pass). Records what each call received.
class PredictingSource final : public gpu::GpuExpertSource {
 public:
  PredictingSource(GpuResidentExpertSource& resident, uint32_t n_experts, uint32_t d_model)
      : resident_(resident), n_experts_(n_experts), d_model_(d_model) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    a_.resize(size_t(kRank) * d_model);
    b_.resize(size_t(n_experts) * kRank);
    bias_.resize(n_experts);
    for (float& v : a_) v = u(rng);
    for (float& v : b_) v = u(rng);
    for (float& v : bias_) v = u(rng);
  }

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
               gpu::Stream stream) override {
    resident_.acquire(layer, experts, n, slots, stream);
  }
  uint32_t max_batch() const override { return n_experts_; }
  bool linear_predictor(uint32_t layer, gpu::LinearPredictor& p) override {
    if (layer % 2 == 0) return false;
    p = gpu::LinearPredictor{kRank, d_model_, n_experts_, a_.data(), b_.data(), bias_.data()};
    return true;
  }
  void observe(uint32_t layer, const float* hidden_device, uint32_t d, gpu::Stream stream) override {
    gpu::synchronize(stream);
    std::vector<float> state(d);
    gpu::download(state.data(), hidden_device, uint64_t(d) * sizeof(float));
    calls_.push_back(Call{layer, false, std::move(state)});
  }
  void observe_scores(uint32_t layer, const float* scores, uint32_t n) override {
    calls_.push_back(Call{layer, true, std::vector<float>(scores, scores + n)});
  }

  // The predictor's scores of a state, in double.
  std::vector<double> scores_of(const std::vector<float>& h) const {
    std::vector<double> low(kRank, 0.0), out(n_experts_, 0.0);
    for (uint32_t r = 0; r < kRank; ++r)
      for (uint32_t c = 0; c < d_model_; ++c) low[r] += double(a_[size_t(r) * d_model_ + c]) * h[c];
    for (uint32_t e = 0; e < n_experts_; ++e) {
      out[e] = bias_[e];
      for (uint32_t r = 0; r < kRank; ++r) out[e] += double(b_[size_t(e) * kRank + r]) * low[r];
    }
    return out;
  }

  struct Call {
    uint32_t layer;
    bool scores;             // observe_scores (else observe)
    std::vector<float> got;  // the scores, or the state
  };
  const std::vector<Call>& calls() const { return calls_; }

 private:
  GpuResidentExpertSource& resident_;
  uint32_t n_experts_, d_model_;
  std::vector<float> a_, b_, bias_;
  std::vector<Call> calls_;
};

// Compares a run with the device predictor against the states of a run without it.
void check_scores(const PredictingSource& with, const PredictingSource& without, uint32_t n_layers) {
  REQUIRE(with.calls().size() == without.calls().size());
  size_t scored = 0, worst_index = 0;
  double worst = 0.0;
  for (size_t i = 0; i < with.calls().size(); ++i) {
    const auto& w = with.calls()[i];
    const auto& o = without.calls()[i];
    REQUIRE(w.layer == o.layer);
    CHECK_FALSE(o.scores);
    // Odd layers with a successor are scored on the device; the rest, and the last layer, observe.
    const bool expect_scores = w.layer % 2 == 1 && w.layer + 1 < n_layers;
    REQUIRE(w.scores == expect_scores);
    if (!w.scores) {
      CHECK(w.got == o.got);  // the same state, bit for bit
      continue;
    }
    ++scored;
    const std::vector<double> want = without.scores_of(o.got);
    REQUIRE(w.got.size() == want.size());
    double scale = 0.0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    for (size_t e = 0; e < want.size(); ++e) {
      const double err = std::abs(double(w.got[e]) - want[e]) / std::max(scale, 1e-6);
      if (err > worst) worst = err, worst_index = i;
    }
  }
  INFO("worst relative error " << worst << " at call " << worst_index);
  CHECK(worst < 1e-5);
  CHECK(scored > 0);
}

}  // namespace

TEST_CASE("a linear predictor scored on the device gets the scores of the state observe would get") {
  Tiny t;
  const uint32_t E = t.cfg.n_routed_experts, L = t.cfg.num_hidden_layers, D = t.cfg.hidden_size;
  PredictingSource without(t.experts, E, D), with(t.experts, E, D), late(t.experts, E, D);
  const auto reference = run(t, without, true, true, false, false);
  const auto got = run(t, with, true, true, false, true);
  CHECK(bitwise_equal(got, reference));
  REQUIRE(without.calls().size() == size_t(L) * (1 + kSteps));
  check_scores(with, without, L);
  // Observed after the next attention's launch, on the side stream: the same scores.
  const auto got_late = run(t, late, true, true, true, true);
  CHECK(bitwise_equal(got_late, reference));
  check_scores(late, without, L);
}
