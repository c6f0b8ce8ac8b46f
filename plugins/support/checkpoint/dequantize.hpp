// Dequantization to float: raw kernels on byte spans (shared with the architecture's CPU code)
// and a whole-tensor helper that finds a weight's `.scale` sidecar in a checkpoint.
//
//   F32 / BF16 / F16     element-wise.
//   F8_E4M3 + .scale     W[i,j] = e4m3(q[i,j]) * 2^(s[i/128, j/128] - 127)   (scale E8M0, or F32)
//   I8 + .scale (FP4)    stored [out, in/2], byte k of row i holds logical (i, 2k) in its low
//                        nibble and (i, 2k+1) in its high nibble; W[i,j] = e2m1 * 2^(s[i, j/32] - 127)
// A 0xFF E8M0 scale is NaN and an error naming the tensor.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint.hpp"

namespace moepage::ckpt {

// Element-wise conversion of F32/BF16/F16 bytes (n elements). Other dtypes throw.
void convert_to_float(Dtype dtype, const uint8_t* src, uint64_t n, float* out, std::string_view tensor);

// Scales are E8M0 bytes or F32 values (scale_dtype), [ceil(rows/128), ceil(cols/128)].
void dequantize_fp8_blocks(const uint8_t* q, uint64_t rows, uint64_t cols, const uint8_t* scale, Dtype scale_dtype,
                           float* out, std::string_view tensor);

// packed [rows, cols/2], scale [rows, cols/32] E8M0; out [rows, cols].
void dequantize_fp4(const uint8_t* packed, uint64_t rows, uint64_t cols, const uint8_t* scale, float* out,
                    std::string_view tensor);

struct FloatTensor {
  std::vector<uint64_t> shape;  // logical shape (FP4: [out, in], twice the stored columns)
  std::vector<float> values;
};

// The name of a weight's scale sidecar: "x.weight" -> "x.scale", anything else -> name + ".scale".
std::string scale_name_for(std::string_view weight_name);

// Dequantizes a whole tensor through the checkpoint's mapping. FP8 and FP4 need their sidecar;
// its shape must match. Errors name the file and the tensor.
FloatTensor dequantize_tensor(const Checkpoint& ck, std::string_view name);

}  // namespace moepage::ckpt
