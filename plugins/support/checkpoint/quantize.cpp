#include "checkpoint/quantize.hpp"

#include <algorithm>
#include <cmath>

#include "dtype/dtype.hpp"

namespace moepage::ckpt {

uint8_t encode_e4m3(float f) {
  if (std::isnan(f)) return 0x7F;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  const float a = std::fabs(f);
  if (a >= 448.0f) return uint8_t(sign | 0x7E);
  if (a < 0.015625f) {                           // below 2^-6: subnormals with quantum 2^-9; code 8 is the first normal
    const float q = std::nearbyint(a * 512.0f);  // default rounding mode: ties to even
    return uint8_t(sign | uint8_t(q));
  }
  const uint32_t bits = float_to_bits(a);
  int exp = int(bits >> 23) - 127;  // -6..8
  uint32_t man = (bits & 0x7FFFFF) >> 20;
  const uint32_t rest = bits & 0xFFFFF;
  if (rest > 0x80000 || (rest == 0x80000 && (man & 1))) ++man;
  if (man == 8) {
    man = 0;
    ++exp;
  }
  uint32_t code = (uint32_t(exp + 7) << 3) | man;
  if (code > 0x7E) code = 0x7E;  // 480 would be the NaN code: saturate to 448
  return uint8_t(sign | code);
}

void quantize_fp8_blocks(const float* w, uint64_t rows, uint64_t cols, uint8_t* q, uint8_t* scale) {
  const uint64_t brows = (rows + kFp8Block - 1) / kFp8Block;
  const uint64_t bcols = (cols + kFp8Block - 1) / kFp8Block;
  for (uint64_t br = 0; br < brows; ++br) {
    for (uint64_t bc = 0; bc < bcols; ++bc) {
      const uint64_t r0 = br * kFp8Block, r1 = std::min(rows, r0 + kFp8Block);
      const uint64_t c0 = bc * kFp8Block, c1 = std::min(cols, c0 + kFp8Block);
      float amax = 0.0f;
      for (uint64_t r = r0; r < r1; ++r) {
        for (uint64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(w[r * cols + c]));
      }
      const uint8_t s = float_to_e8m0_ceil(amax / 448.0f);
      scale[br * bcols + bc] = s;
      const float inv = 1.0f / e8m0_to_float(s);
      for (uint64_t r = r0; r < r1; ++r) {
        for (uint64_t c = c0; c < c1; ++c) q[r * cols + c] = encode_e4m3(w[r * cols + c] * inv);
      }
    }
  }
}

void quantize_fp4(const float* w, uint64_t rows, uint64_t cols, uint8_t* packed, uint8_t* scale) {
  const uint64_t groups = cols / kFp4Group;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t g = 0; g < groups; ++g) {
      const float* src = w + r * cols + g * kFp4Group;
      float amax = 0.0f;
      for (uint32_t i = 0; i < kFp4Group; ++i) amax = std::max(amax, std::fabs(src[i]));
      const uint8_t s = float_to_e8m0_ceil(amax / 6.0f);
      scale[r * groups + g] = s;
      const float inv = 1.0f / e8m0_to_float(s);
      uint8_t* dst = packed + r * (cols / 2) + g * (kFp4Group / 2);
      for (uint32_t i = 0; i < kFp4Group; i += 2) {
        const uint8_t lo = float_to_e2m1(src[i] * inv);
        const uint8_t hi = float_to_e2m1(src[i + 1] * inv);
        dst[i / 2] = uint8_t(lo | (hi << 4));
      }
    }
  }
}

}  // namespace moepage::ckpt
