#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
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
