// Manifold-constrained hyper-connections (mHC): the residual lives in N streams per token.
//   hc_pre   flatten the N streams, unweighted RMS norm over all N*D values, project with fn,
//            then pre = sigmoid(.)+eps, post = 2*sigmoid(.), comb = Sinkhorn(softmax_rows(.)+eps)
//            and collapse the streams with pre into the block input.
//   hc_post  X'[k] = post[k] * block_out + sum_j comb[j][k] * X[j].
#pragma once
#include <cstdint>

#include "deepseek4/cpu/thread_pool.hpp"
#include "deepseek4/forward/params.hpp"

namespace moepage::ds4 {

// The weights of one token from its (2+N)N mixes (already multiplied by the RMS factor).
// Sinkhorn: one column normalisation, then iters-1 rounds of (row, column); eps in every
// denominator. comb is row-major [j][k].
void hc_weights(const float* mixes, const float* base, const float* scale, uint32_t n, uint32_t iters, double eps,
                float* pre, float* post, float* comb);

struct HcScratch {
  float* flat;   // [S, N*D]
  float* mixes;  // [S, (2+N)N]
  float* pre;    // [S, N]
};

// X: [S, N, D]. Writes post [S, N], comb [S, N, N] and the collapsed block input u [S, D].
void hc_pre(cpu::ThreadPool& pool, const HcParams& p, const Config& c, const float* X, int64_t S,
            const HcScratch& scratch, float* post, float* comb, float* u);

// Xout may not alias X.
void hc_post(const float* block_out, const float* X, const float* post, const float* comb, int64_t S, uint32_t n,
             uint32_t d, float* Xout);

// The final collapse before the norm: pre = sigmoid(mixes * scale + base) + eps, h = sum pre_i X_i.
void hc_head(cpu::ThreadPool& pool, const HcParams& p, const Config& c, const float* X, int64_t S,
             const HcScratch& scratch, float* h);

}  // namespace moepage::ds4
