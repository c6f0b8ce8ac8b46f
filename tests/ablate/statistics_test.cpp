// Aggregation of repeated runs: mean, sample sd and n, and how they print.
#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "ablate/schedule.hpp"
#include "ablate/statistics.hpp"

using namespace moepage::ablate;

TEST_CASE("mean and sample standard deviation of a known set") {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  const Summary s = summarize(v);
  CHECK(s.n == 8);
  CHECK(s.mean == doctest::Approx(5.0));
  // Sum of squared deviations 32, over n - 1 = 7.
  CHECK(s.sd == doctest::Approx(2.138089935));
}

TEST_CASE("one value has no spread and no values give n = 0") {
  const std::vector<double> one = {3.5};
  CHECK(summarize(one).sd == 0.0);
  CHECK(summarize(one).mean == 3.5);
  CHECK(summarize(std::vector<double>{}).n == 0);
}

TEST_CASE("runs that did not report a quantity are left out of its n") {
  const std::vector<std::optional<double>> v = {1.0, std::nullopt, 3.0};
  const Summary s = summarize(v);
  CHECK(s.n == 2);
  CHECK(s.mean == doctest::Approx(2.0));
  CHECK(s.sd == doctest::Approx(1.41421356));
}

TEST_CASE("the sd stays accurate for large values with a small spread") {
  const std::vector<double> v = {1e9 + 1, 1e9 + 2, 1e9 + 3};
  CHECK(summarize(v).sd == doctest::Approx(1.0));
}

TEST_CASE("summaries print as mean ± sd, a lone mean, or n/a") {
  CHECK(format_summary(Summary{3, 12.345, 0.25}, 2) == "12.35 ± 0.25");
  CHECK(format_summary(Summary{1, 7.0, 0.0}, 1) == "7.0");
  CHECK(format_summary(Summary{}, 1) == "n/a");
}

TEST_CASE("interleaved order runs every arm in spec order within each repetition") {
  const auto runs = make_schedule(2, 3, 1, RunOrder::Interleaved, 0);
  REQUIRE(runs.size() == 6);
  const uint32_t arms[] = {0, 1, 2, 0, 1, 2};
  for (size_t i = 0; i < runs.size(); ++i) {
    CHECK(runs[i].arm == arms[i]);
    CHECK(runs[i].repetition == i / 3);
  }
}

TEST_CASE("shuffled order is a permutation per repetition, fixed by the seed") {
  const auto a = make_schedule(20, 4, 2, RunOrder::Shuffled, 11);
  const auto b = make_schedule(20, 4, 2, RunOrder::Shuffled, 11);
  const auto c = make_schedule(20, 4, 2, RunOrder::Shuffled, 12);
  REQUIRE(a.size() == 160);
  bool same_as_b = true, same_as_c = true, ever_not_first = false;
  for (size_t i = 0; i < a.size(); ++i) {
    same_as_b = same_as_b && a[i].arm == b[i].arm;
    same_as_c = same_as_c && a[i].arm == c[i].arm;
  }
  for (size_t block = 0; block < 40; ++block) {
    uint32_t seen = 0;
    for (size_t k = 0; k < 4; ++k) seen |= 1u << a[block * 4 + k].arm;
    CHECK(seen == 0xFu);  // every arm exactly once per (repetition, prompt)
    ever_not_first = ever_not_first || a[block * 4].arm != 0;
  }
  CHECK(same_as_b);
  CHECK_FALSE(same_as_c);
  CHECK(ever_not_first);
}
