#include "deepseek4/cpu/fp4_decode.hpp"

#include <stdexcept>

#include "dtype/dtype.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MOEPAGE_CPU_FP4_AVX2 1
#endif

namespace moepage::ds4::cpu {
namespace {

struct Fp4Pairs {
  alignas(8) float pair[256][2];
  Fp4Pairs() {
    for (int b = 0; b < 256; ++b) {
      pair[b][0] = e2m1_to_float(uint8_t(b & 0xF));
      pair[b][1] = e2m1_to_float(uint8_t(b >> 4));
    }
  }
};

}  // namespace

const float (&fp4_pairs())[256][2] {
  static const Fp4Pairs p;
  return p.pair;
}

// Restrict-qualified so the compiler keeps the table and the cursors in registers instead of
// reloading them after every store.
void decode_fp4_portable(const uint8_t* __restrict codes, int64_t n_bytes, float* __restrict out) {
  const float(*__restrict pairs)[2] = fp4_pairs();
  for (int64_t i = 0; i < n_bytes; ++i) {
    const float* p = pairs[codes[i]];
    out[2 * i] = p[0];
    out[2 * i + 1] = p[1];
  }
}

#if defined(MOEPAGE_CPU_FP4_AVX2)

bool decode_fp4_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

// Eight bytes at a time: their nibbles masked apart and interleaved back into column order (16
// codes, one a byte), widened to 32-bit lanes eight at a time; vpermps picks each lane's magnitude by
// its code's low three bits, and the code's bit 3 shifted to bit 31 is the float's sign.
__attribute__((target("avx2"))) void decode_fp4_avx2(const uint8_t* codes, int64_t n_bytes, float* out) {
  const __m256 magnitudes = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m256i sign_bit = _mm256_set1_epi32(8);
  int64_t i = 0;
  for (; i + 8 <= n_bytes; i += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + i));
    const __m128i low = _mm_and_si128(bytes, nibble);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
    const __m128i ordered = _mm_unpacklo_epi8(low, high);
    const __m128i halves[2] = {ordered, _mm_unpackhi_epi64(ordered, ordered)};
    for (int64_t h = 0; h < 2; ++h) {
      const __m256i code = _mm256_cvtepu8_epi32(halves[h]);
      const __m256 magnitude = _mm256_permutevar8x32_ps(magnitudes, code);
      const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(code, sign_bit), 28);
      _mm256_storeu_ps(out + 2 * i + 8 * h, _mm256_xor_ps(magnitude, _mm256_castsi256_ps(sign)));
    }
  }
  decode_fp4_portable(codes + i, n_bytes - i, out + 2 * i);
}

#else

bool decode_fp4_has_avx2() { return false; }
void decode_fp4_avx2(const uint8_t*, int64_t, float*) {
  throw std::logic_error("decode_fp4_avx2: this build has no AVX2 path");
}

#endif

void decode_fp4(const uint8_t* codes, int64_t n_bytes, float* out) {
  static const bool avx2 = decode_fp4_has_avx2();
  if (avx2) decode_fp4_avx2(codes, n_bytes, out);
  else decode_fp4_portable(codes, n_bytes, out);
}

}  // namespace moepage::ds4::cpu
