// Routing rules, and routed experts reaching compute only through the ExpertSource slots.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "deepseek4/forward/model.hpp"
#include "tiny_model.hpp"

using namespace moepage;
using namespace moepage::ds4;

namespace {

// Serves at most top-k experts per call from its own few slots, which it fills with NaN bytes
// before every call: a forward pass that kept an old slot pointer, or read expert bytes any other
// way, would produce NaN or different logits.
class PoisoningSource final : public ExpertSource {
 public:
  PoisoningSource(ResidentExpertSource& backing, uint32_t n_slots)
      : backing_(backing), n_slots_(n_slots), bytes_(size_t(n_slots) * backing.layout().slot_bytes) {}
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) override {
    REQUIRE(n <= n_slots_);
    std::memset(bytes_.data(), 0xFF, bytes_.size());
    const uint64_t sb = backing_.layout().slot_bytes;
    for (uint32_t i = 0; i < n; ++i) {
      std::memcpy(bytes_.data() + i * sb, backing_.slot(layer, uint32_t(experts[i])), sb);
      slots[i] = bytes_.data() + i * sb;
    }
    ++calls;
    log.push_back({false, layer, std::vector<int32_t>(experts, experts + n)});
  }
  uint32_t max_batch() const override { return n_slots_; }
  void stage(uint32_t layer, std::span<const int32_t> experts) override {
    log.push_back({true, layer, std::vector<int32_t>(experts.begin(), experts.end())});
  }
  int calls = 0;
  struct Call {
    bool staged;  // stage(), else acquire()
    uint32_t layer;
    std::vector<int32_t> experts;
  };
  std::vector<Call> log;  // every stage() and acquire(), in order

 private:
  ResidentExpertSource& backing_;
  uint32_t n_slots_;
  std::vector<std::byte> bytes_;
};

// A router over 4 experts choosing 2, for route_token on hand-made logits.
Config router_config(ScoringFunc scoring, double scaling) {
  Config c;
  c.n_routed_experts = 4;
  c.num_experts_per_tok = 2;
  c.routed_scaling_factor = scaling;
  c.scoring_func = scoring;
  return c;
}

}  // namespace

TEST_CASE("experts served through a few reused slots give the resident logits") {
  const Config c = test::tiny_config();
  test::TinyModel tm(c, {Dtype::F8_E4M3, Dtype::I8}, 3);
  cpu::ThreadPool pool(2);
  std::vector<int32_t> ids;
  for (int i = 0; i < 20; ++i) ids.push_back((i * 13 + 5) % int(c.vocab_size));
  const size_t V = c.vocab_size;
  std::vector<float> resident(ids.size() * V), paged(ids.size() * V);
  Model a(c, tm.weights(), tm.layout(), &tm.experts(), pool, ModelOptions{32, 32});
  a.forward(ids.data(), uint32_t(ids.size()), resident.data(), true);
  PoisoningSource source(tm.experts(), c.num_experts_per_tok);
  Model b(c, tm.weights(), tm.layout(), &source, pool, ModelOptions{32, 32});
  b.forward(ids.data(), uint32_t(ids.size()), paged.data(), true);
  CHECK(source.calls > int(c.num_hidden_layers));
  // One chunk of 20 tokens x top-4 over 16 experts: every layer needs several bands. Each layer is
  // staged once, before its first acquire: on hash layers with exactly that acquire's experts, on
  // scored layers (80 routed >= 4 x 16 experts) with the guess of the lowest ids.
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    CAPTURE(l);
    std::vector<const PoisoningSource::Call*> calls;
    for (const auto& call : source.log)
      if (call.layer == l) calls.push_back(&call);
    REQUIRE(calls.size() >= 3);
    CHECK(calls[0]->staged);
    CHECK_FALSE(calls[1]->staged);
    for (size_t i = 1; i < calls.size(); ++i) CHECK_FALSE(calls[i]->staged);
    if (l < 3) CHECK(calls[0]->experts == calls[1]->experts);  // hash-routed (tiny_config)
    else CHECK(calls[0]->experts == std::vector<int32_t>{0, 1, 2, 3});
  }
  double diff = 0;
  for (size_t i = 0; i < resident.size(); ++i) {
    REQUIRE(std::isfinite(paged[i]));
    diff = std::max(diff, double(std::fabs(resident[i] - paged[i])));
  }
  CHECK(diff < 1e-6);
}

TEST_CASE("the score bias picks the experts but the weights come from the unbiased scores") {
  const Config c = router_config(ScoringFunc::SqrtSoftplus, 1.5);
  LayerParams lp;
  lp.mlp = MlpKind::Moe;
  lp.gate_bias = {10.0f, 0.0f, 0.0f, 0.0f};
  const float logits[4] = {0, 1, 2, 3};
  float scores[4], biased[4], w[2];
  int32_t idx[2];
  route_token(lp, c, 0, logits, scores, biased, idx, w);
  CHECK(idx[0] == 0);
  CHECK(idx[1] == 3);
  const double s0 = std::sqrt(std::log1p(std::exp(0.0))), s3 = std::sqrt(std::log1p(std::exp(3.0)));
  CHECK(w[0] == doctest::Approx(1.5 * s0 / (s0 + s3)));
  CHECK(w[1] == doctest::Approx(1.5 * s3 / (s0 + s3)));
}

TEST_CASE("hash layers take their experts from tid2eid of the token") {
  const Config c = router_config(ScoringFunc::Sigmoid, 1.0);
  LayerParams lp;
  lp.mlp = MlpKind::HashMoe;
  lp.tid2eid = {0, 1, 2, 1};             // token 0 -> {0, 1}, token 1 -> {2, 1}
  const float logits[4] = {5, 0, 0, 5};  // expert 3 would win a scored choice
  float scores[4], biased[4], w[2];
  int32_t idx[2];
  route_token(lp, c, 1, logits, scores, biased, idx, w);
  CHECK(idx[0] == 2);
  CHECK(idx[1] == 1);
  CHECK(w[0] == doctest::Approx(0.5));
  CHECK(w[1] == doctest::Approx(0.5));
}

TEST_CASE("a non-finite router score is refused at run time, naming the layer and the token") {
  const Config c = test::tiny_config();
  test::TinyModel tm(c, {}, 1);
  Weights w = tm.weights();
  uint32_t layer = 0;
  while (layer < c.num_hidden_layers && !w.layers[layer].gate_bias.present()) ++layer;
  REQUIRE(layer < c.num_hidden_layers);
  REQUIRE(w.layers[layer].gate_bias.dtype == Dtype::F32);
  // A copy of the bias with a NaN for expert 2 (the load-time check is bypassed here on purpose).
  std::vector<float> bias(c.n_routed_experts);
  std::memcpy(bias.data(), w.layers[layer].gate_bias.data, bias.size() * sizeof(float));
  bias[2] = std::nanf("");
  w.layers[layer].gate_bias.data = reinterpret_cast<const std::byte*>(bias.data());
  cpu::ThreadPool pool(1);
  Model m(c, w, tm.layout(), &tm.experts(), pool, ModelOptions{16, 8});
  const std::vector<int32_t> ids{3, 4};
  std::vector<float> logits(c.vocab_size);
  std::string error;
  try {
    m.forward(ids.data(), 2, logits.data(), false);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  CHECK(error.find("router of layer " + std::to_string(layer) +
                   ": token 0 of the batch (id 3) has a non-finite biased "
                   "score ") != std::string::npos);
  CHECK(error.find("nan for expert 2") != std::string::npos);
}
