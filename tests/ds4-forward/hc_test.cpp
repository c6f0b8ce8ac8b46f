// mHC weights and mixing on cases small enough to compute by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "deepseek4/forward/hc.hpp"

using namespace moepage::ds4;

TEST_CASE("Sinkhorn starts and ends with a column normalisation after the row softmax") {
  // n = 2, 2 iterations, eps 0: comb logits [[0, ln 3], [0, 0]] give the row softmax
  // [[1/4, 3/4], [1/2, 1/2]]; column, row, column normalisation then gives
  // [[4/11, 12/19], [7/11, 7/19]] (worked by hand). A row-first or row-last order gives rows
  // summing to 1 instead, which this matrix does not.
  const float mixes[8] = {0, 1, 0, 0, 0, 0, 0, 0};
  const float base[8] = {0, -2, 0, 0, 0, float(std::log(3.0)), 0, 0};
  const float scale[3] = {2, 1, 1};
  float pre[2], post[2], comb[4];
  hc_weights(mixes, base, scale, 2, 2, 0.0, pre, post, comb);
  CHECK(pre[0] == doctest::Approx(0.5));
  CHECK(pre[1] == doctest::Approx(0.5));  // sigmoid(1 * 2 - 2)
  CHECK(post[0] == doctest::Approx(1.0));
  CHECK(comb[0] == doctest::Approx(4.0 / 11).epsilon(1e-6));
  CHECK(comb[1] == doctest::Approx(12.0 / 19).epsilon(1e-6));
  CHECK(comb[2] == doctest::Approx(7.0 / 11).epsilon(1e-6));
  CHECK(comb[3] == doctest::Approx(7.0 / 19).epsilon(1e-6));
}

TEST_CASE("hc eps is added to pre and to every Sinkhorn denominator but not to post") {
  const float mixes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const float base[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const float scale[3] = {1, 1, 1};
  float pre[2], post[2], comb[4];
  const double eps = 0.01;
  hc_weights(mixes, base, scale, 2, 1, eps, pre, post, comb);
  CHECK(pre[0] == doctest::Approx(0.5 + eps));
  CHECK(post[1] == doctest::Approx(1.0));
  // softmax rows 1/2 + eps, then one column step: (1/2 + eps) / (1 + 2 eps + eps).
  CHECK(comb[0] == doctest::Approx((0.5 + eps) / (1 + 3 * eps)).epsilon(1e-6));
}

TEST_CASE("hc_post mixes the input streams through the columns of comb") {
  // One token, n = 2, d = 1: X'[k] = post[k] * out + sum_j comb[j][k] * X[j].
  const float out[1] = {2};
  const float X[2] = {1, 10};
  const float post[2] = {0.5f, 1.5f};
  const float comb[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  float Xout[2];
  hc_post(out, X, post, comb, 1, 2, 1, Xout);
  CHECK(Xout[0] == doctest::Approx(0.5 * 2 + 0.1 * 1 + 0.3 * 10));
  CHECK(Xout[1] == doctest::Approx(1.5 * 2 + 0.2 * 1 + 0.4 * 10));
}
