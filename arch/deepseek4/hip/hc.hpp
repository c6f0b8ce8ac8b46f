// mHC on the GPU, the twin of forward/hc.hpp. N = hc_mult streams of D floats per token.
#pragma once
#include <cstdint>

#include "deepseek4/hip/device_params.hpp"

namespace moepage::ds4::gpu {

struct GpuHcScratch {
  float* flat = nullptr;    // [S, N*D]
  float* mixes = nullptr;   // [S, (2+N)N]
  float* pre = nullptr;     // [S, N]
};
GpuHcScratch allocate_hc_scratch(const Config& c, int64_t max_batch, DeviceArena& arena);

// u[s] = sum_i pre_i X[s, i]; post [S, N] and comb [S, N, N] for hc_post (Sinkhorn on the device).
void hc_pre(const GpuHcParams& p, const Config& c, const float* X, int64_t S, const GpuHcScratch& sc,
            float* post, float* comb, float* u, Stream stream);
// Xout[s, k] = post[s, k] * block_out[s] + sum_j comb[s, j, k] * X[s, j].
void hc_post(const float* block_out, const float* X, const float* post, const float* comb, int64_t S,
             uint32_t n, uint32_t d, float* Xout, Stream stream);
// The head's collapse: h[s] = sum_i pre_i X[s, i] with the head's own weights.
void hc_head(const GpuHcParams& p, const Config& c, const float* X, int64_t S, const GpuHcScratch& sc, float* h,
             Stream stream);

}  // namespace moepage::ds4::gpu
