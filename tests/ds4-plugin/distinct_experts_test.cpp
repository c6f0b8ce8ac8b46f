// DistinctExperts (arch/deepseek4/plugin/loaded_checkpoint.hpp), which collects the experts the
// plugin hints to the pager before a prompt: distinct ids in order of first use, ids outside the
// layer skipped, and its scratch all zero again once a collection ends, so the next one starts clean.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "deepseek4/plugin/loaded_checkpoint.hpp"

using moepage::ds4::DistinctExperts;

TEST_CASE("DistinctExperts keeps first uses in order, skips ids outside the layer and leaves its marks clear") {
  std::vector<int32_t> out = {99};  // cleared by the collection
  std::vector<uint8_t> seen;
  {
    DistinctExperts distinct(out, seen, 8);
    for (const int64_t e : std::vector<int64_t>{5, 2, 5, -1, 8, 2, 7, 0, int64_t(1) << 40, 7}) distinct.add(e);
    CHECK(out == std::vector<int32_t>{5, 2, 7, 0});
    CHECK(seen.size() == 8);
  }
  CHECK(out == std::vector<int32_t>{5, 2, 7, 0});
  CHECK(seen == std::vector<uint8_t>(8, 0));
  {
    DistinctExperts distinct(out, seen, 8);  // a second collection sees none of the first's marks
    for (const int64_t e : std::vector<int64_t>{0, 5, 0}) distinct.add(e);
  }
  CHECK(out == std::vector<int32_t>{0, 5});
  CHECK(seen == std::vector<uint8_t>(8, 0));
}
