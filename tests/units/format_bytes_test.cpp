// How sizes print in messages and reports (moepage::units): format_bytes, group_digits, checked_mul.
#include <doctest/doctest.h>

#include <cstdint>

#include "units/byte_size.hpp"

using namespace moepage::units;

namespace {
constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
}  // namespace

TEST_CASE("sizes print in binary units with two decimals at most") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1.0 KiB");
  CHECK(format_bytes(40 * kMiB) == "40.0 MiB");
  CHECK(format_bytes(13 * kMiB + kMiB / 4) == "13.25 MiB");
  CHECK(format_bytes(318 * kMiB) == "318.0 MiB");
  CHECK(format_bytes(8 * kGiB) == "8.0 GiB");
  CHECK(format_bytes(kGiB + kGiB / 10) == "1.1 GiB");
  CHECK(format_bytes(kGiB - 1) == "1.0 GiB");  // rounds up into the next unit
  CHECK(format_bytes(UINT64_MAX) == "16.0 EiB");
}

TEST_CASE("exact counts are grouped by thousands") {
  CHECK(group_digits(0) == "0");
  CHECK(group_digits(999) == "999");
  CHECK(group_digits(1000) == "1,000");
  CHECK(group_digits(13369344) == "13,369,344");
  CHECK(group_digits(UINT64_MAX) == "18,446,744,073,709,551,615");
}

TEST_CASE("a product that does not fit in 64 bits is reported, not wrapped") {
  CHECK(checked_mul(1ull << 32, 1ull << 31) == 1ull << 63);
  CHECK_FALSE(checked_mul(1ull << 32, 1ull << 32).has_value());
  CHECK(checked_mul(0, UINT64_MAX) == 0u);
}
