// Launchers of the matrix-core products (mma_tile_staged.hpp) for the dense weights. Each returns false,
// launching nothing, where the path does not apply: no matrix cores it can use (AMD for now,
// NVIDIA below sm_80), an encoding other than FP8 / FP4 / BF16, a column count that is not a
// multiple of 64, or x not readable as float4. The caller then takes the CUDA-core tiles. For
// .hip files only.
#pragma once
#include <cstdint>

#include "deepseek4/hip/decode.hpp"
#include "deepseek4/hip/gemm_policy.hpp"  // matrix_cores_available()
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

// y[t, r] = W[r] . x[t] for t < n_tokens, in the layout of matmul_grouped: rows_per_group rows of
// W read x + (r / rows_per_group) * x_group_stride (a plain product: rows_per_group = rows).
// split: x as two bf16 parts (GemmPolicy::split).
bool matmul_mma(const DeviceMat& m, WeightCode code, const float* x, int64_t ld_x, int64_t x_group_stride,
                int64_t rows_per_group, float* y, int64_t ld_y, int64_t n_tokens, bool split, Stream stream);

// out[t, r] = swiglu_clamped(w1[r] . x[t], w3[r] . x[t]) for t < n_tokens (rows of out: w1.rows).
bool matmul_swiglu_mma(const DeviceMat& w1, const DeviceMat& w3, WeightCode code, const float* x, int64_t ld_x,
                       int64_t n_tokens, float limit, float* out, bool split, Stream stream);

}  // namespace moepage::ds4::gpu
