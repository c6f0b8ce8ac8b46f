// Device-side decoders of the checkpoint encodings, bit for bit those of plugins/support/dtype (NaN codes,
// subnormals and signed zeros included): the GPU kernels must see exactly the weights the CPU
// reference sees. Built from bit patterns rather than float arithmetic so no rounding or
// flush-to-zero can creep in. For .hip files only.
#pragma once
#include <cstdint>

#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu {

__device__ inline float bits_as_float(uint32_t bits) { return __uint_as_float(bits); }

__device__ inline float decode_bf16(uint16_t v) { return bits_as_float(uint32_t(v) << 16); }

__device__ inline float decode_f16(uint16_t v) {
  const uint32_t sign = uint32_t(v & 0x8000u) << 16;
  const uint32_t exp = (v >> 10) & 0x1Fu;
  const uint32_t man = v & 0x3FFu;
  if (exp == 0) {                                             // subnormal or zero: man * 2^-24 is exact in float
    const float m = float(man) * bits_as_float(0x33800000u);  // 2^-24
    return sign ? -m : m;
  }
  if (exp == 31) return bits_as_float(sign | 0x7F800000u | (man << 13));
  return bits_as_float(sign | ((exp + 112u) << 23) | (man << 13));
}

// e4m3fn: 0x7F / 0xFF are NaN (a positive quiet NaN, as std::numeric_limits gives on the host).
__device__ inline float decode_e4m3(uint8_t v) {
  const uint32_t exp = (v >> 3) & 0xFu;
  const uint32_t man = v & 0x7u;
  if (exp == 0xF && man == 0x7) return bits_as_float(0x7FC00000u);
  float m;
  if (exp == 0) m = float(man) * bits_as_float(0x3B000000u);   // man * 2^-9, exact
  else m = bits_as_float(((exp + 120u) << 23) | (man << 20));  // (1 + man/8) * 2^(exp-7)
  return (v & 0x80) ? -m : m;
}

// e8m0: 2^(v-127); v = 0 is the subnormal 2^-127; 0xFF is NaN.
__device__ inline float decode_e8m0(uint8_t v) {
  if (v == 0xFF) return bits_as_float(0x7FC00000u);
  if (v == 0) return bits_as_float(0x00400000u);
  return bits_as_float(uint32_t(v) << 23);
}

// e2m1: bit 3 sign, magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6}.
__device__ inline float decode_e2m1(uint8_t code) {
  const uint32_t e = (code >> 1) & 3u, mant = code & 1u;
  const float m = e == 0 ? 0.5f * float(mant) : bits_as_float(((e + 126u) << 23) | (mant << 22));
  return (code & 8) ? -m : m;
}

// Branch-free decoders for the hot loops of the weight products. The code is shifted to the top
// of a word, an arithmetic shift right copies the sign down while placing the magnitude bits
// where a float keeps them, and a mask keeps sign and magnitude: three integer operations, exact
// for normals and subnormals alike. The result is the code's value times 2^-FP8_RAW_SHIFT
// (2^-FP4_RAW_SHIFT): callers restore the power of two on the other factor (exact, since
// subnormals are never flushed in our kernels). B / K: the byte / nibble of `word` holding it.
// e4m3: the NaN codes (magnitude 0x7F) decode as a number here; callers test fp8_has_nan().
// Where the target converts e4m3 in hardware (MP_FP8_PAIR_CVT) the FP8 decode is the exact value
// (shift 0) and NaN codes come out as NaN, so callers need no NaN test (kFp8RawKeepsNan).
constexpr int kFp8RawShift = MP_FP8_PAIR_CVT ? 0 : 120;
constexpr bool kFp8RawKeepsNan = MP_FP8_PAIR_CVT != 0;
constexpr int kFp4RawShift = 126;

template <int B>
__device__ inline float fp8_raw_from_word(uint32_t word) {
  const int32_t top = int32_t(word << (24 - 8 * B));  // sign at bit 31, magnitude at 24..30
  return bits_as_float(uint32_t(top >> 4) & 0x87F00000u);
}

// The four e4m3 codes of `word` (low byte first), times 2^-kFp8RawShift: half the instructions
// of the bit decode where the hardware converts pairs.
__device__ inline void fp8_raw4_from_word(uint32_t word, float (&w)[4]) {
#if MP_FP8_PAIR_CVT
  mp_e4m3x2_to_float2(word, w[0], w[1]);
  mp_e4m3x2_to_float2(word >> 16, w[2], w[3]);
#else
  w[0] = fp8_raw_from_word<0>(word);
  w[1] = fp8_raw_from_word<1>(word);
  w[2] = fp8_raw_from_word<2>(word);
  w[3] = fp8_raw_from_word<3>(word);
#endif
}

// Non-zero when one of the four e4m3 codes of `word` is a NaN code (magnitude bits all ones).
__device__ inline uint32_t fp8_has_nan(uint32_t word) { return ((word & 0x7F7F7F7Fu) + 0x01010101u) & 0x80808080u; }

// e2m1, nibble K of `word` (low nibble first).
template <int K>
__device__ inline float fp4_raw_from_word(uint32_t word) {
  const int32_t top = int32_t(word << (28 - 4 * K));  // sign at bit 31, magnitude at 28..30
  return bits_as_float(uint32_t(top >> 6) & 0x81C00000u);
}

// The stored encodings the kernels decode (the subset of moepage::Dtype a MatRef may hold), as
// template parameters: the Dtype enum lives in a host header the device pass also sees.
enum class WeightCode : int { F32, BF16, F16, FP8, FP4 };

// One matrix as the kernels see it: the stored tensor's bytes and scales, and the view's band.
struct DeviceMat {
  const uint8_t* data = nullptr;
  const uint8_t* scale = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t row_offset = 0;
};

// Bytes of one stored row of `cols` elements in the given encoding.
__host__ __device__ constexpr int64_t row_bytes_of(WeightCode code, int64_t cols) {
  switch (code) {
    case WeightCode::F32: return cols * 4;
    case WeightCode::BF16:
    case WeightCode::F16: return cols * 2;
    case WeightCode::FP8: return cols;
    default: return cols / 2;
  }
}

// The same for an encoding fixed at compile time: row `row` (of the full tensor) starts at
// data + row * row_bytes.
template <WeightCode W>
__host__ __device__ constexpr int64_t row_bytes(int64_t cols) {
  return row_bytes_of(W, cols);
}

// The scale bytes of stored row `row` start at scale + scale_row_offset (FP8: the block row).
template <WeightCode W>
__device__ inline int64_t scale_row_offset(int64_t row, int64_t cols) {
  if constexpr (W == WeightCode::FP8) return (row / 128) * ((cols + 127) / 128);
  else if constexpr (W == WeightCode::FP4) return row * (cols / 32);
  else return 0;
}

// Element c of a stored row (scale applied). row_data / row_scale: the row's first byte / scale.
template <WeightCode W>
__device__ inline float decode_at(const uint8_t* row_data, const uint8_t* row_scale, int64_t c) {
  if constexpr (W == WeightCode::F32) {
    return reinterpret_cast<const float*>(row_data)[c];
  } else if constexpr (W == WeightCode::BF16) {
    return decode_bf16(reinterpret_cast<const uint16_t*>(row_data)[c]);
  } else if constexpr (W == WeightCode::F16) {
    return decode_f16(reinterpret_cast<const uint16_t*>(row_data)[c]);
  } else if constexpr (W == WeightCode::FP8) {
    return decode_e4m3(row_data[c]) * decode_e8m0(row_scale[c / 128]);
  } else {
    const uint8_t byte = row_data[c / 2];
    return decode_e2m1((c & 1) ? uint8_t(byte >> 4) : uint8_t(byte & 0xF)) * decode_e8m0(row_scale[c / 32]);
  }
}

}  // namespace moepage::ds4::gpu
