// The CSA indexer's scores for long prompts, tiled in registers (.hip files only; included by
// indexer.hip, whose index_scores_kernel is the general form and the one decode steps take).
//
// A prompt token past index_topk visible entries scores every one of them: at Flash's 64 heads
// of 128 dims a 4,096-token prompt asks 26 GFLOP of dot products. The general kernel reads one
// query value from shared memory per multiply-add, and on the H200 it took 5.0 ms of a 4,096-token
// prefill (5% of its kernel time). Here a block holds one token's queries, roped, in shared memory
// once, and walks that token's entries 64 at a time: each 32-dim slice of the entries' keys is
// staged, and each thread keeps a 4-head x 4-entry tile of dot products in registers, so two
// 16-byte shared loads feed 16 multiply-adds. The same products and the same relu/weight/sum as
// the general kernel, in another order (float sums, a rounding apart).
#pragma once
#include <cstdint>

#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu {

constexpr int kTiledHeads = 64;     // the shape this kernel serves: 64 index heads
constexpr int kTiledEntries = 64;   // entries per tile
constexpr int kTiledDims = 32;      // key dims staged at a time (the head dim must be a multiple)
constexpr int kTiledThreads = 256;  // 16 x 16 threads: 4 heads x 4 entries each
constexpr int kTiledTilesPerBlock = 4;
constexpr int kTiledQPitch = kTiledHeads + 4;    // floats per staged query dim ([dim][head])
constexpr int kTiledKPitch = kTiledEntries + 4;  // floats per staged key dim ([dim][entry])

// Shared memory the tiled kernel needs for a head dim: the token's queries, one key slice and
// the 16 rows of per-thread partial scores.
__host__ __device__ constexpr int64_t tiled_scores_shared_bytes(int64_t ihd) {
  return int64_t(sizeof(float)) * (ihd * kTiledQPitch + kTiledDims * kTiledKPitch + 16 * kTiledEntries);
}

// What the tiled kernel reads and writes (the general kernel's arguments, ScoreArgs).
struct TiledScoreArgs {
  const float *q, *w, *keys;  // [S, 64*ihd] (not yet roped), [S, 64], [entries, ihd]
  const float *cos, *sin;     // rope tables [positions, half]
  float* scores;              // [S, stride]
  int64_t p0, stride, topk;
  int32_t ratio, ihd, half;
  float head_scale, score_scale;
};

// grid (blocks per token, S): block x takes tiles x*4 .. x*4+3 of its token's visible entries.
__global__ void __launch_bounds__(kTiledThreads) index_scores_tiled_kernel(TiledScoreArgs a) {
  extern __shared__ float sh[];
  const int64_t s = blockIdx.y;
  const int64_t visible = (a.p0 + s + 1) / a.ratio;
  const int64_t first = int64_t(blockIdx.x) * kTiledTilesPerBlock * kTiledEntries;
  if (visible <= a.topk || first >= visible) return;  // uniform over the block
  const int32_t ihd = a.ihd, rope0 = ihd - 2 * a.half;
  float* qs = sh;                                // [ihd][kTiledQPitch]
  float* ks = qs + ihd * kTiledQPitch;           // [kTiledDims][kTiledKPitch]
  float* part = ks + kTiledDims * kTiledKPitch;  // [16][kTiledEntries]
  const int64_t pos = a.p0 + s;
  const float* q = a.q + s * kTiledHeads * ihd;
  for (int32_t idx = threadIdx.x; idx < kTiledHeads * ihd; idx += blockDim.x) {
    const int32_t h = idx / ihd, i = idx % ihd;
    float v = q[idx];
    if (i >= rope0) {  // the same rotation as rope_rotate (and index_scores_kernel)
      const int32_t k = (i - rope0) / 2;
      const float c = a.cos[pos * a.half + k], sn = a.sin[pos * a.half + k];
      const float x0 = q[h * ihd + rope0 + 2 * k], x1 = q[h * ihd + rope0 + 2 * k + 1];
      v = (i - rope0) % 2 == 0 ? x0 * c - x1 * sn : x1 * c + x0 * sn;
    }
    qs[i * kTiledQPitch + h] = v;
  }
  const int tx = int(threadIdx.x) % 16, ty = int(threadIdx.x) / 16;  // entries 4tx.., heads 4ty..
  float weight[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) weight[j] = a.w[s * kTiledHeads + 4 * ty + j] * a.head_scale;
  const int64_t last =
      first + kTiledTilesPerBlock * kTiledEntries < visible ? first + kTiledTilesPerBlock * kTiledEntries : visible;
  for (int64_t e0 = first; e0 < last; e0 += kTiledEntries) {
    float acc[4][4] = {};
    for (int32_t d0 = 0; d0 < ihd; d0 += kTiledDims) {
      __syncthreads();  // the queries are staged, and the previous slice (or tile) is read
      for (int idx = int(threadIdx.x); idx < kTiledEntries * kTiledDims / 4; idx += blockDim.x) {
        const int e = idx / (kTiledDims / 4), d4 = idx % (kTiledDims / 4);
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (e0 + e < last) v = *reinterpret_cast<const float4*>(a.keys + (e0 + e) * ihd + d0 + 4 * d4);
        ks[(4 * d4) * kTiledKPitch + e] = v.x;
        ks[(4 * d4 + 1) * kTiledKPitch + e] = v.y;
        ks[(4 * d4 + 2) * kTiledKPitch + e] = v.z;
        ks[(4 * d4 + 3) * kTiledKPitch + e] = v.w;
      }
      __syncthreads();
#pragma unroll 8
      for (int d = 0; d < kTiledDims; ++d) {
        const float4 qv = *reinterpret_cast<const float4*>(qs + (d0 + d) * kTiledQPitch + 4 * ty);
        const float4 kv = *reinterpret_cast<const float4*>(ks + d * kTiledKPitch + 4 * tx);
        const float qh[4] = {qv.x, qv.y, qv.z, qv.w}, ke[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int m = 0; m < 4; ++m) acc[j][m] = fmaf(qh[j], ke[m], acc[j][m]);
      }
    }
    // relu(q_h . k) * (w_h * nh^-0.5) * ihd^-0.5 over this thread's heads, then over the 16 rows
    // of heads in row order.
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (acc[j][m] > 0.0f) sum += weight[j] * acc[j][m] * a.score_scale;
      part[ty * kTiledEntries + 4 * tx + m] = sum;
    }
    __syncthreads();
    if (threadIdx.x < kTiledEntries && e0 + threadIdx.x < last) {
      float total = 0.0f;
      for (int r = 0; r < 16; ++r) total += part[r * kTiledEntries + threadIdx.x];
      a.scores[s * a.stride + e0 + threadIdx.x] = total;
    }
  }
}

}  // namespace moepage::ds4::gpu
