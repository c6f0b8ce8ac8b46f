// Element types of checkpoint tensors and their scalar decoders. Shared by the checkpoint reader,
// the architecture's CPU kernels and the tests; needs only the standard library and moepage::units.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace moepage {

enum class Dtype : uint8_t {
  F32,
  F16,
  BF16,
  F8_E4M3,  // FP8 weights; scaled by F8_E8M0 128x128 blocks
  F8_E8M0,  // power-of-two scales: 2^(byte - 127); 0xFF is NaN
  I8,       // raw bytes; FP4 experts store two e2m1 codes per byte (low nibble first)
  I32,
  I64,
  U8,
};

// Safetensors spelling ("F32", "BF16", "F8_E4M3", ...); nullopt for anything else.
std::optional<Dtype> dtype_from_name(std::string_view name);
std::string_view dtype_name(Dtype dtype);
// Bytes per stored element.
uint32_t dtype_size(Dtype dtype);

inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

inline float bf16_to_float(uint16_t v) { return bits_to_float(uint32_t(v) << 16); }
// Round to nearest even; NaN stays NaN.
uint16_t float_to_bf16(float f);
float f16_to_float(uint16_t v);
uint16_t float_to_f16(float f);

// e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa; no infinities; 0x7F/0xFF are NaN. Max 448.
float e4m3_to_float(uint8_t v);
// Round to nearest even, saturating to +-448; NaN maps to 0x7F.
uint8_t float_to_e4m3(float f);

// e8m0: 2^(v - 127). 0xFF is NaN: callers treat it as a corrupt scale.
inline bool e8m0_is_nan(uint8_t v) { return v == 0xFF; }
float e8m0_to_float(uint8_t v);
// The e8m0 byte of the smallest power of two >= |f| (clamped to the representable range).
uint8_t float_to_e8m0_ceil(float f);

// e2m1 (FP4): bit 3 sign, magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6} for codes 0..7.
inline float e2m1_to_float(uint8_t code) {
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMagnitude[code & 7];
  return (code & 8) ? -m : m;
}
// Nearest e2m1 code (ties to the even code).
uint8_t float_to_e2m1(float f);

}  // namespace moepage
