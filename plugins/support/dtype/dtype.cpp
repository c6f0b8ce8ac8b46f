#include "dtype.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "units/enum_names.hpp"

namespace moepage {

namespace {

constexpr units::EnumName<Dtype> kDtypeNames[] = {
    {Dtype::F32, "F32"},         {Dtype::F16, "F16"},         {Dtype::BF16, "BF16"},
    {Dtype::F8_E4M3, "F8_E4M3"}, {Dtype::F8_E8M0, "F8_E8M0"}, {Dtype::I8, "I8"},
    {Dtype::I32, "I32"},         {Dtype::I64, "I64"},         {Dtype::U8, "U8"}};
static_assert(std::size(kDtypeNames) == size_t(Dtype::U8) + 1, "every dtype has its safetensors name");

}  // namespace

std::optional<Dtype> dtype_from_name(std::string_view name) { return units::value_named(kDtypeNames, name); }

std::string_view dtype_name(Dtype dtype) { return units::name_of(kDtypeNames, dtype); }

uint32_t dtype_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32:
    case Dtype::I32: return 4;
    case Dtype::F16:
    case Dtype::BF16: return 2;
    case Dtype::I64: return 8;
    case Dtype::F8_E4M3:
    case Dtype::F8_E8M0:
    case Dtype::I8:
    case Dtype::U8: return 1;
  }
  return 0;
}

uint16_t float_to_bf16(float f) {
  uint32_t b = float_to_bits(f);
  if (std::isnan(f)) return uint16_t((b >> 16) | 0x40);
  b += 0x7FFF + ((b >> 16) & 1);
  return uint16_t(b >> 16);
}

float f16_to_float(uint16_t v) {
  const uint32_t sign = uint32_t(v & 0x8000) << 16;
  const uint32_t exp = (v >> 10) & 0x1F;
  const uint32_t man = v & 0x3FF;
  if (exp == 0) {
    const float m = std::ldexp(float(man), -24);
    return sign ? -m : m;
  }
  if (exp == 31) return bits_to_float(sign | 0x7F800000u | (man << 13));
  return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t float_to_f16(float f) {
  const uint32_t b = float_to_bits(f);
  const uint16_t sign = uint16_t((b >> 16) & 0x8000);
  if (std::isnan(f)) return uint16_t(sign | 0x7E00);
  const float a = std::fabs(f);
  if (a >= 65520.0f) return uint16_t(sign | 0x7C00);
  if (a < std::ldexp(1.0f, -14)) {  // subnormal range: quantum 2^-24
    const float q = std::nearbyint(a * std::ldexp(1.0f, 24));
    return uint16_t(sign | uint16_t(q));
  }
  int e;
  const float m = std::frexp(a, &e);      // a = m * 2^e, m in [0.5, 1)
  float q = std::nearbyint(m * 2048.0f);  // 11 significant bits
  if (q >= 2048.0f) {
    q /= 2.0f;
    ++e;
  }
  const uint32_t exp = uint32_t(e - 1 + 15);
  if (exp >= 31) return uint16_t(sign | 0x7C00);
  return uint16_t(sign | (exp << 10) | (uint32_t(q) & 0x3FF));
}

float e4m3_to_float(uint8_t v) {
  const bool neg = v & 0x80;
  const uint32_t exp = (v >> 3) & 0xF;
  const uint32_t man = v & 0x7;
  if (exp == 0xF && man == 0x7) return std::numeric_limits<float>::quiet_NaN();
  float m;
  if (exp == 0) m = std::ldexp(float(man), -9);  // subnormal: man/8 * 2^-6
  else m = std::ldexp(1.0f + float(man) / 8.0f, int(exp) - 7);
  return neg ? -m : m;
}

uint8_t float_to_e4m3(float f) {
  if (std::isnan(f)) return 0x7F;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const float a = std::fabs(f);
  // Search the 127 non-negative finite codes for the nearest (ties: even code). Small and exact.
  uint8_t best = 0;
  float best_err = std::numeric_limits<float>::infinity();
  for (uint8_t c = 0; c <= 0x7E; ++c) {
    const float err = std::fabs(e4m3_to_float(c) - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return uint8_t(sign | best);
}

float e8m0_to_float(uint8_t v) {
  if (v == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int(v) - 127);
}

uint8_t float_to_e8m0_ceil(float f) {
  const float a = std::fabs(f);
  if (!(a > 0.0f)) return 0;
  int e = int(std::ceil(std::log2(a)));
  e = std::max(-127, std::min(127, e));
  return uint8_t(e + 127);
}

uint8_t float_to_e2m1(float f) {
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float a = std::fabs(f);
  uint8_t best = 0;
  float best_err = std::numeric_limits<float>::infinity();
  for (uint8_t c = 0; c < 8; ++c) {
    const float err = std::fabs(kMagnitude[c] - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return uint8_t((std::signbit(f) && best != 0 ? 8 : 0) | best);
}

}  // namespace moepage
