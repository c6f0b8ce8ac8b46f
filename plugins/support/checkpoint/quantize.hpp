// Encoders for writing quantized checkpoints (synth, tests): FP8 E4M3 with E8M0 128x128 block
// scales, and FP4 E2M1 (two codes per byte, low nibble first) with E8M0 scales per 32 inputs.
// Layouts match docs/deepseek-v4.md §4.2.
#pragma once
#include <cstdint>

namespace moepage::ckpt {

inline constexpr uint32_t kFp8Block = 128;
inline constexpr uint32_t kFp4Group = 32;

// Round-to-nearest-even E4M3 encoding by bit arithmetic (the dtype library's encoder searches all
// codes and is too slow for gigabytes); saturates to +-448, NaN -> 0x7F. Same results.
uint8_t encode_e4m3(float f);

// w: [rows, cols] row-major floats. Writes q [rows, cols] E4M3 and scale
// [ceil(rows/128), ceil(cols/128)] E8M0, each block's scale the smallest power of two with
// amax / scale <= 448. Call it band by band with `rows` a multiple of 128 to stream.
void quantize_fp8_blocks(const float* w, uint64_t rows, uint64_t cols, uint8_t* q, uint8_t* scale);

// w: [rows, cols] (cols even, a multiple of 32). Writes packed [rows, cols/2] and scale
// [rows, cols/32], each group's scale the smallest power of two with amax / scale <= 6.
void quantize_fp4(const float* w, uint64_t rows, uint64_t cols, uint8_t* packed, uint8_t* scale);

}  // namespace moepage::ckpt
