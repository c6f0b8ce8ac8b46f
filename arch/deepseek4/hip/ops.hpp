// Launchers of the GPU kernels shared by several blocks. Each mirrors a CPU kernel of cpu/ and is
// checked against it by tests/ds4-hip-kernels. All pointers are device memory unless named
// *_host; every call is asynchronous on `stream` and throws GpuError if the launch fails.
#pragma once
#include <cstdint>

#include "deepseek4/cpu/matref.hpp"
#include "deepseek4/cpu/ops.hpp"
#include "deepseek4/hip/gemm_policy.hpp"
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

// cpu::matmul: y[t, r] = sum_c W[r, c] * x[t, c] for t < n_tokens, r < w.rows. x rows are ld_x
// floats apart, y rows ld_y. W is read once per call whatever n_tokens is (decode is memory
// bound: the dequantization of FP8/FP4/BF16/F16 is fused into the product). Accepts a row band
// (w.row_offset) like the CPU kernel.
// Products over policy.matrix_min_tokens tokens or more take the matrix cores where they can.
void matmul(const cpu::MatRef& w, const float* x, int64_t ld_x, float* y, int64_t ld_y, int64_t n_tokens, Stream stream,
            const GemmPolicy& policy = {});

// One token: y = W rms_norm(x) (cpu::rms_norm with weight `gain`, which may be null, then
// matmul), the norm folded into the single-token product: one launch, no normed copy of x. The
// result differs from norm-then-matmul by float rounding. normed_input_applies says whether that
// kernel takes w (else norm x first); matmul_normed_input throws GpuError where it does not.
bool normed_input_applies(const cpu::MatRef& w, const float* x, const float* gain, const GemmPolicy& policy = {});
void matmul_normed_input(const cpu::MatRef& w, const float* x, const float* gain, float eps, float* y, Stream stream,
                         const GemmPolicy& policy = {});

// `groups` row bands of w in one launch: band g (rows [g*rows_per_group, (g+1)*rows_per_group))
// times the x block at x + g*x_group_stride, into y columns [g*rows_per_group, ...) — the same as
// `groups` matmul() calls on w.row_band(g * rows_per_group, rows_per_group) (mHC-grouped wo_a).
void matmul_grouped(const cpu::MatRef& w, const float* x, int64_t ld_x, int64_t x_group_stride, int64_t rows_per_group,
                    int64_t groups, float* y, int64_t ld_y, int64_t n_tokens, Stream stream,
                    const GemmPolicy& policy = {});

// cpu::rms_norm on `rows` rows of n floats, `ld` floats apart; weight may be null; out may alias x.
void rms_norm(const float* x, int64_t rows, int64_t n, int64_t ld, const float* weight, float eps, float* out,
              Stream stream);

// cpu::Rope::rotate on many heads: for token s < S and head h < heads, the rope_dim floats at
// x + s*ld_token + h*ld_head + col0 rotate by the angles of position pos0 + s*pos_step (table rows
// of cos/sin, [positions, rope_dim/2]); inverse rotates back.
void rope_rotate(float* x, int64_t S, int64_t heads, int64_t ld_token, int64_t ld_head, int64_t col0, int32_t rope_dim,
                 const float* cos, const float* sin, int64_t pos0, int64_t pos_step, bool inverse, Stream stream);

// h1 = swiglu_clamped(w1 x, w3 x) for n_tokens rows of x (ld_x apart), h1/h3 [n_tokens, rows]
// (h3 is scratch). One token whose rows suit the single-token kernel runs as one launch.
void matmul_swiglu(const cpu::MatRef& w1, const cpu::MatRef& w3, const float* x, int64_t ld_x, int64_t n_tokens,
                   float limit, float* h1, float* h3, Stream stream, const GemmPolicy& policy = {});

// cpu::swiglu_clamped, element-wise over n.
void swiglu_clamped(const float* gate, const float* up, int64_t n, float limit, float* out, Stream stream);

// X[s, i, :] = row tokens[s] of the embedding table (decoded), for every stream i < copies.
void embed(const cpu::MatRef& table, const int32_t* tokens, int64_t S, int64_t copies, float* X, Stream stream);

// mean[d] = (1/n) sum_i streams[i*d_model + d]: what a predictor sees after a layer.
void stream_mean(const float* streams, int32_t n, int64_t d_model, float* mean, Stream stream);

}  // namespace moepage::ds4::gpu
