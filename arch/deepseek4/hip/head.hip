// The output head on the GPU (head.hpp), the twin of forward/head.cpp.
#include "deepseek4/hip/head.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/ops.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kGreedyThreads = 256;
constexpr int kGreedyUnroll = 8;  // loads in flight per thread

// (value, index) b beats a: larger value, or equal value at a smaller index.
__device__ inline bool beats(float bv, int32_t bi, float av, int32_t ai) { return bv > av || (bv == av && bi < ai); }

// Block reduction of (best value, its index, first NaN index); thread 0 gets the block's.
__device__ inline void greedy_block_reduce(float& bv, int32_t& bi, int32_t& ni) {
  __shared__ float sv[kGreedyThreads / MP_MIN_WARP_SIZE];
  __shared__ int32_t si[kGreedyThreads / MP_MIN_WARP_SIZE], sn[kGreedyThreads / MP_MIN_WARP_SIZE];
  for (int off = MP_WARP_SIZE / 2; off > 0; off >>= 1) {
    const float ov = MP_SHFL_XOR(bv, off);
    const int32_t oi = MP_SHFL_XOR(bi, off), on = MP_SHFL_XOR(ni, off);
    if (beats(ov, oi, bv, bi)) bv = ov, bi = oi;
    ni = on < ni ? on : ni;
  }
  const int warp = int(threadIdx.x) / MP_WARP_SIZE, warps = int(blockDim.x) / MP_WARP_SIZE;
  if (threadIdx.x % MP_WARP_SIZE == 0) sv[warp] = bv, si[warp] = bi, sn[warp] = ni;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < warps; ++w) {
    if (beats(sv[w], si[w], bv, bi)) bv = sv[w], bi = si[w];
    ni = sn[w] < ni ? sn[w] : ni;
  }
}

// Block b scans [b*per_block, ...): each thread its strided elements in index order, kGreedyUnroll
// loads issued before any is compared, keeping the first maximum (strict >) and the first NaN. The
// block's result goes to the work area; the block drawing the last ticket reduces them all.
__global__ void __launch_bounds__(kGreedyThreads)
    greedy_kernel(const float* logits, int64_t V, int64_t per_block, int32_t* work) {
  kernel_entry();
  const int64_t begin = int64_t(blockIdx.x) * per_block, end = begin + per_block < V ? begin + per_block : V;
  float bv = -INFINITY;
  int32_t bi = begin + threadIdx.x < end ? int32_t(begin + threadIdx.x) : INT_MAX, ni = INT_MAX;
  for (int64_t i0 = begin + threadIdx.x; i0 < end; i0 += int64_t(kGreedyUnroll) * blockDim.x) {
    float v[kGreedyUnroll];
#pragma unroll
    for (int u = 0; u < kGreedyUnroll; ++u) {
      const int64_t i = i0 + int64_t(u) * blockDim.x;
      v[u] = i < end ? logits[i] : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < kGreedyUnroll; ++u) {
      const int64_t i = i0 + int64_t(u) * blockDim.x;
      if (i >= end) break;
      if (isnan(v[u])) ni = ni < int32_t(i) ? ni : int32_t(i);
      else if (v[u] > bv) bv = v[u], bi = int32_t(i);
    }
  }
  greedy_block_reduce(bv, bi, ni);
  // work: [0] pick, [1] first NaN, [2] ticket, then per block (value bits, index, NaN index).
  __shared__ bool last;
  if (threadIdx.x == 0) {
    int32_t* mine = work + 3 + 3 * int64_t(blockIdx.x);
    mine[0] = __float_as_int(bv);
    mine[1] = bi;
    mine[2] = ni;
    __threadfence();
    last = atomicAdd(reinterpret_cast<unsigned int*>(work + 2), 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  bv = -INFINITY, bi = INT_MAX, ni = INT_MAX;
  for (int64_t b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    const volatile int32_t* theirs = work + 3 + 3 * b;
    const float v = __int_as_float(theirs[0]);
    const int32_t i = theirs[1], n = theirs[2];
    if (beats(v, i, bv, bi)) bv = v, bi = i;
    ni = n < ni ? n : ni;
  }
  __syncthreads();  // the block's shared partials are reused below
  greedy_block_reduce(bv, bi, ni);
  if (threadIdx.x == 0) {
    work[0] = bi;
    work[1] = ni == INT_MAX ? -1 : ni;
    work[2] = 0;  // ready for the next launch
  }
}

}  // namespace

void greedy_token(const float* logits, int64_t V, int32_t* work, Stream stream) {
  if (V <= 0 || V > INT_MAX) throw GpuError("gpu greedy_token: vocabulary of " + std::to_string(V) + " logits");
  // About one block per multiprocessor, each with a few thousand logits: one memory round trip.
  const int64_t per_block =
      std::max<int64_t>(int64_t(kGreedyThreads) * kGreedyUnroll, (V + kGreedyMaxBlocks - 1) / kGreedyMaxBlocks);
  const unsigned blocks = unsigned((V + per_block - 1) / per_block);
  launch("gpu greedy_token", greedy_kernel, blocks, kGreedyThreads, 0, native(stream), logits, V, per_block, work);
}

void output_head(const GpuModelParams& mp, const Config& c, const float* X, int64_t S, const GpuHcScratch& hs, float* u,
                 float* xn, float* logits, Stream stream) {
  HcInput in;
  in.X = X;
  output_head(mp, c, in, S, hs, u, xn, logits, stream);
}

void output_head(const GpuModelParams& mp, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& hs,
                 float* u, float* xn, float* logits, Stream stream) {
  hc_head(mp.hc_head, c, in, S, hs, u, stream, mp.norm, xn);  // the final norm fused into the collapse
  matmul(mp.head, xn, c.hidden_size, logits, c.vocab_size, S, stream, mp.gemm);
}

}  // namespace moepage::ds4::gpu
