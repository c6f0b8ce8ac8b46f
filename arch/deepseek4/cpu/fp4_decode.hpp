// FP4 (e2m1) codes to floats for the CPU products: two codes a byte, low nibble first (the even
// column), scales not applied. The portable loop looks every byte up in a table of its two floats;
// where the processor has AVX2 (asked once, at the first call) sixteen codes at a time are spread
// into 32-bit lanes and decoded in registers (a permute of the eight magnitudes, the sign bit moved
// into place). Both give the same floats bit for bit, negative zero included.
#pragma once
#include <cstdint>

namespace moepage::ds4::cpu {

// Every byte as its (low nibble, high nibble) pair of floats.
const float (&fp4_pairs())[256][2];

// out[0 .. 2 n_bytes) = the codes of codes[0 .. n_bytes), by the fastest path this processor has.
void decode_fp4(const uint8_t* codes, int64_t n_bytes, float* out);

// The two paths by name, for the test that holds them to each other.
void decode_fp4_portable(const uint8_t* codes, int64_t n_bytes, float* out);
bool decode_fp4_has_avx2();
// Only where decode_fp4_has_avx2() is true.
void decode_fp4_avx2(const uint8_t* codes, int64_t n_bytes, float* out);

}  // namespace moepage::ds4::cpu
