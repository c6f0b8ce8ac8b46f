#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "deepseek4/cpu/ops.hpp"

using namespace moepage::ds4::cpu;

TEST_CASE("rms_norm matches its definition with and without a weight") {
  const float x[4] = {1, -2, 3, 0.5f};
  const float w[4] = {1, 2, 0.5f, -1};
  const double ms = (1 + 4 + 9 + 0.25) / 4;
  const double r = 1 / std::sqrt(ms + 1e-6);
  float out[4];
  rms_norm(x, 4, w, 1e-6, out);
  for (int i = 0; i < 4; ++i) CHECK(out[i] == doctest::Approx(x[i] * r * w[i]).epsilon(1e-6));
  rms_norm(x, 4, nullptr, 1e-6, out);
  for (int i = 0; i < 4; ++i) CHECK(out[i] == doctest::Approx(x[i] * r).epsilon(1e-6));
}

TEST_CASE("softmax is stable for large logits and sums to one") {
  float x[3] = {1000, 1001, 999};
  softmax(x, 3);
  const double e = std::exp(1.0), z = 1 + e + 1 / e;
  CHECK(x[1] == doctest::Approx(e / z));
  CHECK(x[0] + x[1] + x[2] == doctest::Approx(1.0));
}

TEST_CASE("router scores: sqrt-softplus (linear above 20 like torch), sigmoid and softmax") {
  const float l[3] = {-1, 0.5f, 25};
  float s[3];
  router_scores(l, 3, Scoring::SqrtSoftplus, s);
  CHECK(s[0] == doctest::Approx(std::sqrt(std::log1p(std::exp(-1.0)))));
  CHECK(s[2] == doctest::Approx(5.0));
  router_scores(l, 3, Scoring::Sigmoid, s);
  CHECK(s[1] == doctest::Approx(1 / (1 + std::exp(-0.5))));
  router_scores(l, 3, Scoring::Softmax, s);
  CHECK(s[0] + s[1] + s[2] == doctest::Approx(1.0));
  CHECK(s[2] > 0.99f);
}

TEST_CASE("top_k returns the largest values in order, ties to the lower index, NaN last") {
  const float v[6] = {1, 3, 3, 2, std::numeric_limits<float>::quiet_NaN(), 3};
  int32_t idx[4];
  top_k(v, 6, 4, idx);
  CHECK(idx[0] == 1);
  CHECK(idx[1] == 2);
  CHECK(idx[2] == 5);
  CHECK(idx[3] == 3);
  int32_t all[6];
  top_k(v, 6, 6, all);
  CHECK(all[5] == 4);
}

TEST_CASE("top_k of zero keeps nothing and touches nothing, not even the slot before out") {
  const float v[3] = {1, 2, 3};
  std::vector<int32_t> out(1, -7);  // on the heap: a read of out[-1] is an ASan error in CI
  top_k(v, 3, 0, out.data());
  CHECK(out[0] == -7);
}

TEST_CASE("swiglu clamps the gate from above and the up projection on both sides") {
  const float gate[3] = {20, -3, 1};
  const float up[3] = {-20, 2, 30};
  float out[3];
  swiglu_clamped(gate, up, 3, 10.0f, out);
  auto silu = [](double g) { return g / (1 + std::exp(-g)); };
  CHECK(out[0] == doctest::Approx(silu(10) * -10));
  CHECK(out[1] == doctest::Approx(silu(-3) * 2));
  CHECK(out[2] == doctest::Approx(silu(1) * 10));
}
