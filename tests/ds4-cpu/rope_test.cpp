#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "deepseek4/cpu/rope.hpp"

using namespace moepage::ds4::cpu;

TEST_CASE("the inverse rotation undoes the forward rotation at the same position") {
  Rope rope(RopeSpec{160000.0, true, 16.0, 65536.0, 32.0, 1.0}, 64);
  std::vector<float> x(64), y;
  for (int i = 0; i < 64; ++i) x[size_t(i)] = std::sin(0.7f * float(i)) + 0.1f;
  y = x;
  float c[32], s[32];
  rope.angles(12345, c, s);
  rope.rotate(y.data(), c, s, false);
  double moved = 0;
  for (int i = 0; i < 64; ++i) moved = std::max(moved, double(std::fabs(y[size_t(i)] - x[size_t(i)])));
  CHECK(moved > 0.1);
  rope.rotate(y.data(), c, s, true);
  for (int i = 0; i < 64; ++i) CHECK(y[size_t(i)] == doctest::Approx(x[size_t(i)]).epsilon(1e-5));
}

TEST_CASE("rotation pairs adjacent channels (interleaved), not the two halves") {
  Rope rope(RopeSpec{}, 4);
  float c[2], s[2];
  rope.angles(1, c, s);  // angle 1 for pair 0, 1/100 for pair 1
  float x[4] = {1, 0, 0, 0};
  rope.rotate(x, c, s, false);
  CHECK(x[0] == doctest::Approx(std::cos(1.0)));
  CHECK(x[1] == doctest::Approx(std::sin(1.0)));
  CHECK(x[2] == 0.0f);
}

TEST_CASE("main rope frequencies are theta^(-2i/d); compress rope blends in YaRN with a ramp") {
  Rope main(RopeSpec{10000.0}, 64);
  for (int i = 0; i < 32; ++i)
    CHECK(main.inv_freq()[size_t(i)] == doctest::Approx(std::pow(10000.0, -2.0 * i / 64)).epsilon(1e-6));
  // DeepSeek-V4-Flash compress rope: theta 160000, factor 16, original context 65536.
  const double theta = 160000, factor = 16, orig = 65536;
  Rope yarn(RopeSpec{theta, true, factor, orig, 32.0, 1.0}, 64);
  auto corr = [&](double rot) { return 64 * std::log(orig / (rot * 2 * std::numbers::pi)) / (2 * std::log(theta)); };
  const double low = std::max(0.0, std::floor(corr(32))), high = std::min(63.0, std::ceil(corr(1)));
  for (int i = 0; i < 32; ++i) {
    const double base = std::pow(theta, -2.0 * i / 64);
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double want = base / factor * ramp + base * (1 - ramp);
    CHECK(yarn.inv_freq()[size_t(i)] == doctest::Approx(want).epsilon(1e-6));
  }
  CHECK(yarn.inv_freq()[0] == doctest::Approx(1.0));  // fast dims keep their frequency
  CHECK(yarn.inv_freq()[31] == doctest::Approx(std::pow(theta, -62.0 / 64) / factor));  // slow ones are divided
}
