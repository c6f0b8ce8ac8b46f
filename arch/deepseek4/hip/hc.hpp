// mHC on the GPU, the twin of forward/hc.hpp. N = hc_mult streams of D floats per token.
//
// At batch 1 a site is latency bound: the fn projection is split over many blocks, the last block
// of each token finishing the RMS scale and the Sinkhorn weights, and for one token the blocks then
// collapse their columns in the same launch (hc_site, hc_head); otherwise hc_collapse_norm (the
// collapse fused with the block's input RMSNorm) is a second launch. The previous site's hc_post
// can be folded into the read of the streams (HcInput).
#pragma once
#include <cstdint>

#include "deepseek4/hip/device_params.hpp"
#include "deepseek4/hip/side_stream.hpp"

namespace moepage::ds4::gpu {

struct GpuHcScratch {
  float* mixes = nullptr;       // [S, (2+N)N]: fn @ rms-normalised X, as the CPU's mixes
  float* pre = nullptr;         // [S, N]
  float* partials = nullptr;    // [S, (2+N)N + 1 + N(N+1)/2, chunks]: per-chunk dot products, sum of
                                // squares and (fused collapse) Gram matrix of the streams
  uint32_t* tickets = nullptr;  // [S]: blocks of a token done (zero between launches)
  double* u_inv_rms = nullptr;  // [S]: the fused collapse's RMS scale of u
  uint32_t* flags = nullptr;    // [S]: bumped once per fused launch when pre and u_inv_rms are out
  int64_t max_batch = 0;
};
GpuHcScratch allocate_hc_scratch(const Config& c, int64_t max_batch, DeviceArena& arena);

// The streams a site reads: X itself, or, with block_out set, the previous site's hc_post applied
// to X on the fly (Xout[s, k] = post[s, k] * block_out[s] + sum_j comb[s, j, k] * X[s, j]), which is
// also written to Xout. post/comb here are the previous site's and must not alias the new ones.
struct HcInput {
  const float* X = nullptr;          // [S, N, D]
  const float* block_out = nullptr;  // [S, D] or null (X is the site's input as is)
  const float* post = nullptr;       // [S, N]
  const float* comb = nullptr;       // [S, N, N]
  float* Xout = nullptr;             // [S, N, D], must not alias X
  // With block_out: also the mean over the streams of the batch's last token, [D] (float sums in
  // stream order, as stream_mean), for the expert source's observe(); may be null.
  float* last_mean = nullptr;
};

// The site's weights: sc.pre, post [S, N] and comb [S, N, N] (Sinkhorn on the device).
void hc_site_weights(const GpuHcParams& p, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& sc,
                     float* post, float* comb, Stream stream);
// The site's weights and xn = rms_norm(collapse of Xin) * norm, Xin being in.Xout when the previous
// hc_post is folded in, else in.X: one launch for one token, else hc_site_weights then
// hc_collapse_norm(Xin, ..., norm, rms_norm_eps, nullptr, xn). With comb_side, comb (the Sinkhorn) is
// computed on that stream after a fork from `stream`, off the main chain: the caller joins it
// before anything reads comb (the next site's hc_post, the head).
void hc_site(const GpuHcParams& p, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& sc, float* post,
             float* comb, const float* norm, float* xn, Stream stream, SideStream* comb_side = nullptr);
// u[s] = sum_i pre_i X[s, i] with sc.pre; then, when xn is given, xn = rms_norm(u) * norm (norm may
// be null). u may be null when only xn is wanted.
void hc_collapse_norm(const float* X, const GpuHcScratch& sc, int64_t S, uint32_t n, uint32_t d, const float* norm,
                      float eps, float* u, float* xn, Stream stream);

// u[s] = sum_i pre_i X[s, i]; post [S, N] and comb [S, N, N] for hc_post (Sinkhorn on the device).
void hc_pre(const GpuHcParams& p, const Config& c, const float* X, int64_t S, const GpuHcScratch& sc, float* post,
            float* comb, float* u, Stream stream);
// Xout[s, k] = post[s, k] * block_out[s] + sum_j comb[s, j, k] * X[s, j].
void hc_post(const float* block_out, const float* X, const float* post, const float* comb, int64_t S, uint32_t n,
             uint32_t d, float* Xout, Stream stream);
// The head's collapse: h[s] = sum_i pre_i X[s, i] with the head's own weights; with norm_out set,
// also norm_out = rms_norm(h) * norm (the final norm fused).
void hc_head(const GpuHcParams& p, const Config& c, const float* X, int64_t S, const GpuHcScratch& sc, float* h,
             Stream stream, const float* norm = nullptr, float* norm_out = nullptr);
// The same on streams that may still need the last block's hc_post (HcInput).
void hc_head(const GpuHcParams& p, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& sc, float* h,
             Stream stream, const float* norm = nullptr, float* norm_out = nullptr);

}  // namespace moepage::ds4::gpu
