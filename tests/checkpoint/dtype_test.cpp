// Exhaustive checks of the scalar formats the checkpoint layer decodes.
#include <doctest/doctest.h>

#include <cmath>

#include "checkpoint/quantize.hpp"
#include "dtype/dtype.hpp"

using namespace moepage;

TEST_CASE("every e2m1 code decodes to its magnitude and sign and encodes back") {
  const float magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint8_t code = 0; code < 16; ++code) {
    const float v = e2m1_to_float(code);
    CHECK(std::fabs(v) == magnitude[code & 7]);
    CHECK(std::signbit(v) == bool(code & 8));
    // -0 (code 8) encodes as +0; every other code round-trips.
    CHECK(float_to_e2m1(v) == (code == 8 ? 0 : code));
  }
}

TEST_CASE("every e4m3 code decodes as sign, 4-bit exponent bias 7, 3-bit mantissa, with 0x7F and 0xFF NaN") {
  float previous = -1.0f;
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = uint8_t(c);
    const float v = e4m3_to_float(code);
    if ((code & 0x7F) == 0x7F) {
      CHECK(std::isnan(v));
      continue;
    }
    const int exp = (code >> 3) & 0xF, man = code & 7;
    const double expected = exp == 0 ? std::ldexp(man / 8.0, -6) : std::ldexp(1.0 + man / 8.0, exp - 7);
    CHECK(double(std::fabs(v)) == expected);
    CHECK(std::signbit(v) == bool(code & 0x80));
    if (code <= 0x7E) {
      CHECK(v > previous);  // positive codes are strictly increasing
      previous = v;
    }
    CHECK(float_to_e4m3(v) == code);
    CHECK(ckpt::encode_e4m3(v) == code);
  }
  CHECK(e4m3_to_float(0x7E) == 448.0f);
  CHECK(e4m3_to_float(0x01) == std::ldexp(1.0f, -9));
}

TEST_CASE("the fast e4m3 encoder agrees with the reference encoder on midpoints, saturation and NaN") {
  for (int c = 0; c < 0x7E; ++c) {
    const float a = e4m3_to_float(uint8_t(c)), b = e4m3_to_float(uint8_t(c + 1));
    for (float v : {a, (a + b) / 2, std::nextafter((a + b) / 2, 0.0f), std::nextafter((a + b) / 2, 1000.0f), b}) {
      CHECK(ckpt::encode_e4m3(v) == float_to_e4m3(v));
      CHECK(ckpt::encode_e4m3(-v) == float_to_e4m3(-v));
    }
  }
  for (float v : {448.0f, 449.0f, 464.0f, 470.0f, 1e9f, INFINITY}) {
    CHECK(ckpt::encode_e4m3(v) == 0x7E);
    CHECK(ckpt::encode_e4m3(-v) == 0xFE);
  }
  CHECK(ckpt::encode_e4m3(NAN) == 0x7F);
}

TEST_CASE("e8m0 edges: 0 is 2^-127, 127 is 1, 254 is 2^127 and 0xFF is NaN") {
  CHECK(e8m0_to_float(0) == std::ldexp(1.0f, -127));
  CHECK(e8m0_to_float(127) == 1.0f);
  CHECK(e8m0_to_float(254) == std::ldexp(1.0f, 127));
  CHECK(std::isnan(e8m0_to_float(0xFF)));
  CHECK(e8m0_is_nan(0xFF));
  CHECK_FALSE(e8m0_is_nan(254));
  for (int b = 0; b < 255; ++b) CHECK(e8m0_to_float(uint8_t(b)) == std::ldexp(1.0f, b - 127));
}

TEST_CASE("every non-NaN bf16 and f16 bit pattern survives a round trip through float") {
  int bf16_mismatches = 0, f16_mismatches = 0;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const uint16_t h = uint16_t(b);
    const float bf = bf16_to_float(h);
    if (!std::isnan(bf) && float_to_bf16(bf) != h) ++bf16_mismatches;
    const float f = f16_to_float(h);
    if (!std::isnan(f) && float_to_f16(f) != h) ++f16_mismatches;
  }
  CHECK(bf16_mismatches == 0);
  CHECK(f16_mismatches == 0);
}
