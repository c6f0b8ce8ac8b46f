// The CSA lightning indexer's scores (.hip files only; included by indexer.hip, which launches
// them and selects the top-k): I = sum_h relu(q_h . k) * (w_h * nh^-0.5) * ihd^-0.5 for every
// visible compressed entry of a token. Two kernels with the same products, in different orders:
// the general one (any head count; decode steps) and, for prompt chunks at Flash's 64 heads, a
// register-tiled one.
//
// A prompt token past index_topk visible entries scores every one of them: at 64 heads of 128
// dims a 4,096-token prompt asks 26 GFLOP of dot products, and that work grows with the square of
// the prompt. The general kernel reads one query value from shared memory per multiply-add; on the
// H200 it took 5.0 ms of a 4,096-token prefill (5% of its kernel time), the tiled one 1.0 ms.
#pragma once
#include <cstdint>

#include "deepseek4/hip/attention_reduce.hpp"
#include "deepseek4/hip/launch.hpp"
#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu {

constexpr int kScoreThreads = 256;

struct ScoreArgs {
  const float *q, *w, *keys;  // [S, nh*ihd] (not yet roped), [S, nh], [entries, ihd]
  const float *cos, *sin;     // rope tables [positions, half]
  float* scores;              // [S, stride]
  int64_t p0, stride, topk;
  int32_t ratio, nh, ihd, half;
  float head_scale, score_scale;
};

// Element i of head h of a token's indexer query q, roped at position pos: the same rotation as
// rope_rotate, on the last 2 * half dims.
__device__ inline float roped_query(const ScoreArgs& a, const float* q, int32_t h, int32_t i, int64_t pos) {
  const int32_t ihd = a.ihd, rope0 = ihd - 2 * a.half;
  if (i < rope0) return q[h * ihd + i];
  const int32_t k = (i - rope0) / 2;
  const float c = a.cos[pos * a.half + k], sn = a.sin[pos * a.half + k];
  const float x0 = q[h * ihd + rope0 + 2 * k], x1 = q[h * ihd + rope0 + 2 * k + 1];
  return (i - rope0) % 2 == 0 ? x0 * c - x1 * sn : x1 * c + x0 * sn;
}

// I = sum_h relu(q_h . k) * (w_h * nh^-0.5) * ihd^-0.5 for every visible entry of a token; tokens
// that see at most top-k entries take them all and are skipped. A block first puts the token's
// queries, roped (the rope of the indexer's q is folded in here), in shared memory with rows
// padded by one float, so lanes reading one head each hit distinct banks. Then one warp per entry:
// lane h accumulates q_h . k over the dims (each key element broadcast to all lanes), and the
// heads' terms meet in one warp sum, not one per head.
__global__ void __launch_bounds__(kScoreThreads) index_scores_kernel(ScoreArgs a) {
  kernel_entry();
  extern __shared__ float qs[];  // [nh, ihd + 1]
  const int64_t s = blockIdx.y;
  const int64_t visible = (a.p0 + s + 1) / a.ratio;
  if (visible <= a.topk) return;  // uniform over the block
  const int64_t pos = a.p0 + s;
  const int32_t ihd = a.ihd, row = ihd + 1;
  const float* q = a.q + s * a.nh * ihd;
  for (int32_t idx = threadIdx.x; idx < a.nh * ihd; idx += blockDim.x)
    qs[(idx / ihd) * row + idx % ihd] = roped_query(a, q, idx / ihd, idx % ihd, pos);
  __syncthreads();
  const int lane = threadIdx.x % MP_WARP_SIZE;
  const int64_t warps = blockDim.x / MP_WARP_SIZE;
  const float* wts = a.w + s * a.nh;
  for (int64_t e = blockIdx.x * warps + threadIdx.x / MP_WARP_SIZE; e < visible; e += gridDim.x * warps) {
    const float* key = a.keys + e * ihd;
    float acc = 0.0f;
    for (int32_t h = lane; h < a.nh; h += MP_WARP_SIZE) {
      const float* qh = qs + h * row;
      float d = 0.0f;
      for (int32_t i = 0; i < ihd; ++i) d += qh[i] * key[i];
      if (d > 0.0f) acc += (wts[h] * a.head_scale) * d * a.score_scale;
    }
    acc = warp_sum(acc);
    if (lane == 0) a.scores[s * a.stride + e] = acc;
  }
}

// The tiled kernel: a block holds one token's queries, roped, in shared memory once and walks that
// token's entries 64 at a time; each 32-dim slice of the entries' keys is staged, and each thread
// keeps a 4-head x 4-entry tile of dot products in registers, so two 16-byte shared loads feed 16
// multiply-adds.
constexpr int kTiledHeads = 64;                     // the shape this kernel serves: 64 index heads
constexpr int kTiledEntries = 64;                   // entries per tile
constexpr int kTiledDims = 32;                      // key dims staged at a time (the head dim must be a multiple)
constexpr int kTiledHeadRows = kTiledHeads / 4;     // threads along the heads, 4 heads each
constexpr int kTiledEntryCols = kTiledEntries / 4;  // threads along the entries, 4 entries each
constexpr int kTiledThreads = kTiledHeadRows * kTiledEntryCols;
constexpr int kTiledTilesPerBlock = 4;
constexpr int kTiledQPitch = kTiledHeads + 4;    // floats per staged query dim ([dim][head])
constexpr int kTiledKPitch = kTiledEntries + 4;  // floats per staged key dim ([dim][entry])

// Shared memory the tiled kernel needs for a head dim: the token's queries, one key slice and
// the kTiledHeadRows rows of per-thread partial scores.
__host__ __device__ constexpr int64_t tiled_scores_shared_bytes(int64_t ihd) {
  return int64_t(sizeof(float)) * (ihd * kTiledQPitch + kTiledDims * kTiledKPitch + kTiledHeadRows * kTiledEntries);
}

// grid (blocks per token, S): block x takes tiles x*4 .. x*4+3 of its token's visible entries.
__global__ void __launch_bounds__(kTiledThreads) index_scores_tiled_kernel(ScoreArgs a) {
  kernel_entry();
  extern __shared__ float sh[];
  const int64_t s = blockIdx.y;
  const int64_t visible = (a.p0 + s + 1) / a.ratio;
  const int64_t first = int64_t(blockIdx.x) * kTiledTilesPerBlock * kTiledEntries;
  if (visible <= a.topk || first >= visible) return;  // uniform over the block
  const int32_t ihd = a.ihd;
  float* qs = sh;                                // [ihd][kTiledQPitch]
  float* ks = qs + ihd * kTiledQPitch;           // [kTiledDims][kTiledKPitch]
  float* part = ks + kTiledDims * kTiledKPitch;  // [kTiledHeadRows][kTiledEntries]
  const int64_t pos = a.p0 + s;
  const float* q = a.q + s * kTiledHeads * ihd;
  for (int32_t idx = threadIdx.x; idx < kTiledHeads * ihd; idx += blockDim.x)
    qs[(idx % ihd) * kTiledQPitch + idx / ihd] = roped_query(a, q, idx / ihd, idx % ihd, pos);
  const int tx = int(threadIdx.x) % kTiledEntryCols, ty = int(threadIdx.x) / kTiledEntryCols;  // entries 4tx, heads 4ty
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
    // relu(q_h . k) * (w_h * nh^-0.5) * ihd^-0.5 over this thread's heads, then over the rows of
    // heads in row order.
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
      for (int r = 0; r < kTiledHeadRows; ++r) total += part[r * kTiledEntries + threadIdx.x];
      a.scores[s * a.stride + e0 + threadIdx.x] = total;
    }
  }
}

}  // namespace moepage::ds4::gpu
