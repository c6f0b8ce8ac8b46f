// The output head on the GPU (head.hpp), the twin of forward/head.cpp.
#include "deepseek4/hip/head.hpp"

#include <climits>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/ops.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kGreedyThreads = 1024;

// (value, index) b beats a: larger value, or equal value at a smaller index.
__device__ inline bool beats(float bv, int32_t bi, float av, int32_t ai) { return bv > av || (bv == av && bi < ai); }

// Each thread walks its strided share in index order keeping the first maximum (strict >) and the
// first NaN; then the block reduces (value desc, index asc) and (NaN index min).
__global__ void __launch_bounds__(kGreedyThreads) greedy_kernel(const float* logits, int64_t V, int32_t* out) {
  __shared__ float best_v[kGreedyThreads / MP_MIN_WARP_SIZE];
  __shared__ int32_t best_i[kGreedyThreads / MP_MIN_WARP_SIZE], nan_i[kGreedyThreads / MP_MIN_WARP_SIZE];
  float bv = -INFINITY;
  int32_t bi = threadIdx.x < V ? int32_t(threadIdx.x) : INT_MAX, ni = INT_MAX;
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
    const float v = logits[i];
    if (isnan(v)) ni = ni < int32_t(i) ? ni : int32_t(i);
    else if (v > bv) bv = v, bi = int32_t(i);
  }
  for (int off = MP_WARP_SIZE / 2; off > 0; off >>= 1) {
    const float ov = MP_SHFL_XOR(bv, off);
    const int32_t oi = MP_SHFL_XOR(bi, off), on = MP_SHFL_XOR(ni, off);
    if (beats(ov, oi, bv, bi)) bv = ov, bi = oi;
    ni = on < ni ? on : ni;
  }
  const int warp = int(threadIdx.x) / MP_WARP_SIZE, warps = int(blockDim.x) / MP_WARP_SIZE;
  if (threadIdx.x % MP_WARP_SIZE == 0) best_v[warp] = bv, best_i[warp] = bi, nan_i[warp] = ni;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < warps; ++w) {
    if (beats(best_v[w], best_i[w], bv, bi)) bv = best_v[w], bi = best_i[w];
    ni = nan_i[w] < ni ? nan_i[w] : ni;
  }
  out[0] = bi;
  out[1] = ni == INT_MAX ? -1 : ni;
}

}  // namespace

void greedy_token(const float* logits, int64_t V, int32_t* out, Stream stream) {
  if (V <= 0 || V > INT_MAX) throw GpuError("gpu greedy_token: vocabulary of " + std::to_string(V) + " logits");
  greedy_kernel<<<1, kGreedyThreads, 0, native(stream)>>>(logits, V, out);
  MP_GPU_CHECK_LAUNCH("gpu greedy_token");
}

void output_head(const GpuModelParams& mp, const Config& c, const float* X, int64_t S, const GpuHcScratch& hs,
                 float* u, float* xn, float* logits, Stream stream) {
  HcInput in;
  in.X = X;
  output_head(mp, c, in, S, hs, u, xn, logits, stream);
}

void output_head(const GpuModelParams& mp, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& hs,
                 float* u, float* xn, float* logits, Stream stream) {
  hc_head(mp.hc_head, c, in, S, hs, u, stream, mp.norm, xn);  // the final norm fused into the collapse
  matmul(mp.head, xn, c.hidden_size, logits, c.vocab_size, S, stream);
}

}  // namespace moepage::ds4::gpu
