// mHC on the GPU (hc.hpp): the RMS norm and fn projection reuse the shared kernels; the per-token
// weights (sigmoids, row softmax, Sinkhorn) run one thread per token in double, the same
// sequence of operations as forward/hc.cpp hc_weights, so they agree with it to float rounding.
#include "deepseek4/hip/hc.hpp"

#include <algorithm>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/ops.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kBlock = 256;
constexpr uint32_t kMaxStreams = 16;  // the CPU's hc_weights holds a 16x16 matrix

unsigned blocks_for(int64_t n) { return unsigned(std::max<int64_t>(1, (n + kBlock - 1) / kBlock)); }

__device__ inline double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

__global__ void hc_weights_kernel(const float* mixes, const float* base, const float* scale, int64_t S, uint32_t n,
                                  uint32_t iters, double eps, float* pre_out, float* post_out, float* comb_out) {
  const int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= S) return;
  const float* mx = mixes + s * (2 + n) * n;
  float* pre = pre_out + s * n;
  float* post = post_out + s * n;
  float* comb = comb_out + s * n * n;
  for (uint32_t i = 0; i < n; ++i) {
    pre[i] = float(sigmoid(double(mx[i]) * scale[0] + base[i]) + eps);
    post[i] = float(2.0 * sigmoid(double(mx[n + i]) * scale[1] + base[n + i]));
  }
  double m[kMaxStreams * kMaxStreams];
  for (uint32_t j = 0; j < n; ++j) {
    double row_max = -INFINITY;
    for (uint32_t k = 0; k < n; ++k) {
      m[j * n + k] = double(mx[2 * n + j * n + k]) * scale[2] + base[2 * n + j * n + k];
      row_max = fmax(row_max, m[j * n + k]);
    }
    double sum = 0;
    for (uint32_t k = 0; k < n; ++k) sum += (m[j * n + k] = exp(m[j * n + k] - row_max));
    for (uint32_t k = 0; k < n; ++k) m[j * n + k] = m[j * n + k] / sum + eps;
  }
  // Sinkhorn: a column normalisation, then iters-1 rounds of (rows, columns).
  for (uint32_t it = 0; it < iters; ++it) {
    if (it > 0) {
      for (uint32_t j = 0; j < n; ++j) {
        double sum = 0;
        for (uint32_t k = 0; k < n; ++k) sum += m[j * n + k];
        for (uint32_t k = 0; k < n; ++k) m[j * n + k] /= sum + eps;
      }
    }
    for (uint32_t k = 0; k < n; ++k) {
      double sum = 0;
      for (uint32_t j = 0; j < n; ++j) sum += m[j * n + k];
      for (uint32_t j = 0; j < n; ++j) m[j * n + k] /= sum + eps;
    }
  }
  for (uint32_t i = 0; i < n * n; ++i) comb[i] = float(m[i]);
}

// The head's weights: pre only.
__global__ void hc_head_weights_kernel(const float* mixes, const float* base, const float* scale, int64_t S,
                                       uint32_t n, double eps, float* pre_out) {
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= S * n) return;
  const int64_t s = id / n, i = id % n;
  pre_out[id] = float(sigmoid(double(mixes[s * n + i]) * scale[0] + base[i]) + eps);
}

// u[s, e] = sum_i pre[s, i] X[s, i, e], in double like the CPU collapse.
__global__ void collapse_kernel(const float* X, const float* pre, int64_t S, uint32_t n, uint32_t d, float* u) {
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= S * d) return;
  const int64_t s = id / d, e = id % d;
  double acc = 0;
  for (uint32_t i = 0; i < n; ++i) acc += double(pre[s * n + i]) * double(X[(s * n + i) * d + e]);
  u[id] = float(acc);
}

__global__ void hc_post_kernel(const float* block_out, const float* X, const float* post, const float* comb, int64_t S,
                               uint32_t n, uint32_t d, float* Xout) {
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= S * n * d) return;
  const int64_t e = id % d, k = (id / d) % n, s = id / (int64_t(d) * n);
  const float* cb = comb + s * n * n;
  double acc = double(post[s * n + k]) * double(block_out[s * d + e]);
  for (uint32_t j = 0; j < n; ++j) acc += double(cb[j * n + k]) * double(X[(s * n + j) * d + e]);
  Xout[id] = float(acc);
}

void check_streams(const Config& c) {
  if (c.hc_mult == 0 || c.hc_mult > kMaxStreams)
    throw GpuError("gpu mHC: hc_mult " + std::to_string(c.hc_mult) + " is outside 1.." + std::to_string(kMaxStreams));
}

// flat = rms-normalised X (all N*D values of each token); mixes = fn @ flat.
void project(const GpuHcParams& p, const Config& c, const float* X, int64_t S, const GpuHcScratch& sc,
             Stream stream) {
  const int64_t nd = int64_t(c.hc_mult) * c.hidden_size;
  rms_norm(X, S, nd, nd, nullptr, float(c.rms_norm_eps), sc.flat, stream);
  matmul(p.fn, sc.flat, nd, sc.mixes, p.fn.rows, S, stream);
}

}  // namespace

GpuHcScratch allocate_hc_scratch(const Config& c, int64_t max_batch, DeviceArena& arena) {
  check_streams(c);
  const int64_t n = c.hc_mult, nd = n * c.hidden_size;
  GpuHcScratch sc;
  sc.flat = arena.take<float>(uint64_t(max_batch * nd));
  sc.mixes = arena.take<float>(uint64_t(max_batch * (2 + n) * n));
  sc.pre = arena.take<float>(uint64_t(max_batch * n));
  return sc;
}

void hc_pre(const GpuHcParams& p, const Config& c, const float* X, int64_t S, const GpuHcScratch& sc, float* post,
            float* comb, float* u, Stream stream) {
  if (S <= 0) return;
  check_streams(c);
  const uint32_t n = c.hc_mult, d = c.hidden_size;
  project(p, c, X, S, sc, stream);
  hc_weights_kernel<<<blocks_for(S), kBlock, 0, native(stream)>>>(sc.mixes, p.base, p.scale, S, n,
                                                                   c.hc_sinkhorn_iters, c.hc_eps, sc.pre, post, comb);
  MP_GPU_CHECK_LAUNCH("gpu hc_pre weights");
  collapse_kernel<<<blocks_for(S * d), kBlock, 0, native(stream)>>>(X, sc.pre, S, n, d, u);
  MP_GPU_CHECK_LAUNCH("gpu hc_pre collapse");
}

void hc_post(const float* block_out, const float* X, const float* post, const float* comb, int64_t S, uint32_t n,
             uint32_t d, float* Xout, Stream stream) {
  if (S <= 0) return;
  hc_post_kernel<<<blocks_for(S * n * d), kBlock, 0, native(stream)>>>(block_out, X, post, comb, S, n, d, Xout);
  MP_GPU_CHECK_LAUNCH("gpu hc_post");
}

void hc_head(const GpuHcParams& p, const Config& c, const float* X, int64_t S, const GpuHcScratch& sc, float* h,
             Stream stream) {
  if (S <= 0) return;
  check_streams(c);
  const uint32_t n = c.hc_mult, d = c.hidden_size;
  project(p, c, X, S, sc, stream);
  hc_head_weights_kernel<<<blocks_for(S * n), kBlock, 0, native(stream)>>>(sc.mixes, p.base, p.scale, S, n,
                                                                            c.hc_eps, sc.pre);
  MP_GPU_CHECK_LAUNCH("gpu hc_head weights");
  collapse_kernel<<<blocks_for(S * d), kBlock, 0, native(stream)>>>(X, sc.pre, S, n, d, h);
  MP_GPU_CHECK_LAUNCH("gpu hc_head collapse");
}

}  // namespace moepage::ds4::gpu
