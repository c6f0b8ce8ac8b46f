// The FP4 decode of the CPU products: the portable table loop against the scalar decoder of
// plugins/support/dtype, and the AVX2 path (where the processor has it) against the portable one,
// bit for bit, over every byte value, every run length around the vector width and odd alignments.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "deepseek4/cpu/fp4_decode.hpp"
#include "dtype/dtype.hpp"

using namespace moepage;
using namespace moepage::ds4::cpu;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Bytes 0..255 in order, then random ones, `total` in all.
std::vector<uint8_t> test_bytes(size_t total) {
  std::vector<uint8_t> b(total);
  std::mt19937 rng(7);
  for (size_t i = 0; i < total; ++i) b[i] = i < 256 ? uint8_t(i) : uint8_t(rng() & 0xFF);
  return b;
}

}  // namespace

TEST_CASE("the portable FP4 decode gives each nibble's e2m1 value, low nibble first") {
  const std::vector<uint8_t> codes = test_bytes(256);
  std::vector<float> out(512, 1234.0f);
  decode_fp4_portable(codes.data(), 256, out.data());
  for (int b = 0; b < 256; ++b) {
    CAPTURE(b);
    CHECK(bits(out[size_t(2 * b)]) == bits(e2m1_to_float(uint8_t(b & 0xF))));
    CHECK(bits(out[size_t(2 * b + 1)]) == bits(e2m1_to_float(uint8_t(b >> 4))));
  }
  CHECK(std::signbit(out[size_t(2 * 0x08)]));  // code 8 is negative zero
}

TEST_CASE("the AVX2 FP4 decode equals the portable one bit for bit, at every length and alignment") {
  if (!decode_fp4_has_avx2()) {
    // Not a pass: this processor cannot run the path, so nothing of it was checked.
    WARN_MESSAGE(false, "this processor has no AVX2: the AVX2 FP4 decode was not checked");
    return;
  }
  const std::vector<uint8_t> all = test_bytes(256 + 64 + 3);
  for (size_t offset = 0; offset < 3; ++offset) {
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(8), int64_t(9), int64_t(15), int64_t(16), int64_t(17),
                      int64_t(63), int64_t(256), int64_t(256 + 64)}) {
      CAPTURE(offset);
      CAPTURE(n);
      std::vector<float> expect(size_t(2 * n) + 1, 99.0f), got(size_t(2 * n) + 1, 99.0f);
      decode_fp4_portable(all.data() + offset, n, expect.data());
      decode_fp4_avx2(all.data() + offset, n, got.data() + 0);
      CHECK(std::memcmp(expect.data(), got.data(), expect.size() * sizeof(float)) == 0);
    }
  }
  // The dispatching entry takes one of the two and so agrees with both.
  std::vector<float> a(size_t(600)), b(size_t(600));
  decode_fp4(all.data(), 300, a.data());
  decode_fp4_portable(all.data(), 300, b.data());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
