// The one size grammar (moepage::units::parse_size) that profiles, --set, --budget and ablation
// specs share.
#include <doctest/doctest.h>

#include "units/byte_size.hpp"

using moepage::units::parse_size;

TEST_CASE("binary size units are powers of 1024") {
  CHECK(parse_size("64KiB") == 64ull * 1024);
  CHECK(parse_size("512MiB") == 512ull << 20);
  CHECK(parse_size("8GiB") == 8ull << 30);
  CHECK(parse_size("2TiB") == 2ull << 40);
}

TEST_CASE("decimal size units are powers of 1000 and fractions round down to whole bytes") {
  CHECK(parse_size("1.5GB") == 1'500'000'000ull);
  CHECK(parse_size("3KB") == 3000ull);
  CHECK(parse_size("1TB") == 1'000'000'000'000ull);
  CHECK(parse_size("0.5KiB") == 512ull);
  CHECK(parse_size("1.0001KiB") == 1024ull);
}

TEST_CASE("a plain number is a byte count and one space may precede the unit") {
  CHECK(parse_size("4096") == 4096ull);
  CHECK(parse_size("0") == 0ull);
  CHECK(parse_size("16B") == 16ull);
  CHECK(parse_size("8 GiB") == 8ull << 30);
}

TEST_CASE("negative, garbage, wrongly cased and overflowing sizes are refused") {
  for (const char* bad : {"-1", "-1GiB", "", "auto", "GiB", "8gib", "8GIB", "8 ", "8  GiB", "1.", ".5GiB", "8GiBs",
                          "0x10", "1e3", "18446744073709551616", "20000000TiB", "8 Gi B"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_size(bad).has_value());
  }
}

TEST_CASE("the largest byte count still fits") { CHECK(parse_size("18446744073709551615") == UINT64_MAX); }
