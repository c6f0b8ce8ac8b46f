#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/sampler.hpp"

using moepage::cli::Sampler;
using moepage::cli::SamplerSettings;

TEST_CASE("greedy sampling picks the largest logit, the first of equal ones") {
  Sampler sampler(SamplerSettings{}, 5);
  CHECK(sampler.pick(std::vector<float>{0.1f, 3.0f, -1.0f, 3.0f, 2.9f}) == 1);
  CHECK(sampler.pick(std::vector<float>{-5.0f, -4.0f, -3.0f, -2.0f, -1.0f}) == 4);
}

TEST_CASE("top_k of one and a tiny top_p both reduce sampling to the largest logit") {
  const std::vector<float> logits{1.0f, 2.0f, 5.0f, 4.9f};
  Sampler top_k({1.0, 1, 1.0, 7}, 4);
  Sampler top_p({1.0, 0, 0.01, 7}, 4);
  for (int i = 0; i < 50; ++i) {
    CHECK(top_k.pick(logits) == 2);
    CHECK(top_p.pick(logits) == 2);
  }
}

TEST_CASE("the same seed gives the same samples and draws follow the softmax") {
  // Weights 1 : 3 at temperature 1: token 1 should win about three draws in four.
  const std::vector<float> logits{0.0f, static_cast<float>(std::log(3.0))};
  Sampler a({1.0, 0, 1.0, 42}, 2), b({1.0, 0, 1.0, 42}, 2);
  int ones = 0;
  for (int i = 0; i < 4000; ++i) {
    const int32_t x = a.pick(logits);
    CHECK(x == b.pick(logits));
    ones += x;
  }
  CHECK(ones > 2850);
  CHECK(ones < 3150);
}

TEST_CASE("a NaN logit or a wrong logit count is an error, not a silent pick") {
  Sampler sampler(SamplerSettings{}, 3);
  CHECK_THROWS_WITH_AS(sampler.pick(std::vector<float>{0.0f, std::numeric_limits<float>::quiet_NaN(), 1.0f}),
                       "sampler: logit 1 is NaN", std::runtime_error);
  CHECK_THROWS_AS(sampler.pick(std::vector<float>{0.0f, 1.0f}), std::runtime_error);
}

TEST_CASE(
    "greedy sampling over long vocabularies agrees with a plain first-maximum scan, ties and infinities included") {
  std::mt19937 rng(5);
  const float inf = std::numeric_limits<float>::infinity();
  for (int round = 0; round < 400; ++round) {
    const uint32_t n = 1 + rng() % 300;
    std::vector<float> logits(n);
    // Few distinct values, so equal maxima land in every lane and in the tail.
    for (float& v : logits) v = rng() % 11 == 0 ? (rng() % 2 ? inf : -inf) : float(int(rng() % 7) - 3);
    if (round % 5 == 0) std::fill(logits.begin(), logits.end(), -inf);
    size_t expected = 0;
    for (size_t i = 1; i < n; ++i)
      if (logits[i] > logits[expected]) expected = i;
    Sampler sampler(SamplerSettings{}, n);
    CHECK(sampler.pick(logits) == int32_t(expected));
    // A NaN anywhere (lanes or tail) is reported at its index.
    const size_t at = rng() % n;
    logits[at] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH_AS(sampler.pick(logits), ("sampler: logit " + std::to_string(at) + " is NaN").c_str(),
                         std::runtime_error);
  }
}
