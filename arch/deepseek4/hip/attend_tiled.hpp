// The prefill attend kernel (.hip files only). A prompt batch has many (token, head) items, and
// every head of a token reads the same keys (one shared KV head): one block serves one token and
// up to eight of its heads, stages the token's keys in shared memory a tile at a time, and each
// warp folds its head's share of the tile into a running max, denominator and weighted sum held
// in registers (lanes own channels). Staging the tile once for the block's heads cuts the key
// traffic by that many times against one block per (token, head), which read the 512-wide keys
// from L2 once per head.
#pragma once
#include <cmath>
#include <cstdint>

#include "deepseek4/hip/attend_args.hpp"
#include "deepseek4/hip/attention_reduce.hpp"

namespace moepage::ds4::gpu {

constexpr int kTiledThreads = 256;
constexpr int kTiledWarpsMax = kTiledThreads / MP_MIN_WARP_SIZE;
constexpr int kTiledKeyRegs = 16;  // channels per lane: heads of up to 16 * 32 = 512 elements
constexpr int kTileKeys = 16;      // keys staged per step: 32 KiB at a head of 512
static_assert(kTileKeys >= kTiledWarpsMax, "the tile's rows hold the warps' partial sums afterwards");

// Heads of at most this many elements take the tiled kernel.
constexpr int64_t kTiledMaxHead = int64_t(kTiledKeyRegs) * MP_MIN_WARP_SIZE;

// Shared memory of one block: the key tile, then each warp's max and denominator.
inline size_t attend_tiled_shared_bytes(int64_t hd) {
  return (size_t(kTileKeys) * size_t(hd) + 2 * size_t(kTiledWarpsMax)) * sizeof(float);
}

// The most heads of H (a power of two up to the warps of the narrowest-warp-count target) one
// block serves: every head needs at least one warp of its own.
inline int attend_tiled_heads_per_block(int64_t H) {
#if defined(MOEPAGE_GPU_NVIDIA)
  const int cap = kTiledThreads / 32;
#else
  const int cap = kTiledThreads / 64;  // 4 warps of 64 lanes on a wave64 target
#endif
  int hb = cap;
  while (hb > 1 && H % hb != 0) hb /= 2;
  return hb;
}

// Keys [t0, t0 + n) of the token into rows of `tile`, by the whole block (float4s when a head is
// a whole number of them).
__device__ inline void stage_keys(const AttendArgs& a, const TokenKeys& keys, int64_t t0, int64_t n, float* tile) {
  const int64_t hd = a.hd;
  if (hd % 4 == 0) {
    const int64_t per_row = hd / 4;
    for (int64_t i = threadIdx.x; i < n * per_row; i += blockDim.x) {
      const int64_t r = i / per_row, c = i % per_row;
      reinterpret_cast<float4*>(tile + r * hd)[c] = reinterpret_cast<const float4*>(keys.key(a, t0 + r))[c];
    }
  } else {
    for (int64_t i = threadIdx.x; i < n * hd; i += blockDim.x) tile[i] = keys.key(a, t0 + i / hd)[i % hd];
  }
}

// The body of a kernel launched with grid.x = S * (H / heads_per_block), blockDim.x =
// kTiledThreads and attend_tiled_shared_bytes(hd) of dynamic shared memory.
__device__ inline void attend_tiled(const AttendArgs& a, int heads_per_block) {
  extern __shared__ float smem[];
  const int64_t hd = a.hd;
  float* tile = smem;                           // [kTileKeys, hd]; afterwards [warps, hd] partial sums
  float* warp_max = smem + kTileKeys * hd;      // [warps]
  float* warp_den = warp_max + kTiledWarpsMax;  // [warps]

  const int hb = heads_per_block;
  const int64_t groups = a.H / hb, s = blockIdx.x / groups, h0 = (blockIdx.x % groups) * hb;
  const int warps = int(blockDim.x) / MP_WARP_SIZE, warp = int(threadIdx.x) / MP_WARP_SIZE;
  const int lane = int(threadIdx.x) % MP_WARP_SIZE;
  const int shares = warps / hb;  // warps per head
  const int hh = warp % hb, share = warp / hb;
  const bool active = share < shares;
  const int64_t pos = a.p0 + s;
  const TokenKeys keys(a, s);

  const float* q = a.q + (s * a.H + h0 + hh) * hd;
  float qv[kTiledKeyRegs], av[kTiledKeyRegs];
#pragma unroll
  for (int u = 0; u < kTiledKeyRegs; ++u) {
    const int64_t d = lane + int64_t(u) * MP_WARP_SIZE;
    qv[u] = d < hd ? q[d] : 0.0f;
    av[u] = 0.0f;
  }
  float m = -INFINITY, den = 0.0f;
  for (int64_t t0 = 0; t0 < keys.n_keys; t0 += kTileKeys) {
    const int64_t n_tile = keys.n_keys - t0 < kTileKeys ? keys.n_keys - t0 : kTileKeys;
    __syncthreads();  // every warp is done with the previous tile
    stage_keys(a, keys, t0, n_tile, tile);
    __syncthreads();
    if (!active) continue;
    for (int64_t j = share; j < n_tile; j += shares) {
      const float* key = tile + j * hd;
      float kv[kTiledKeyRegs];
#pragma unroll
      for (int u = 0; u < kTiledKeyRegs; ++u) {
        const int64_t d = lane + int64_t(u) * MP_WARP_SIZE;
        kv[u] = d < hd ? key[d] : 0.0f;
      }
      float dot = 0.0f;
#pragma unroll
      for (int u = 0; u < kTiledKeyRegs; ++u) dot += qv[u] * kv[u];
      const float logit = warp_sum(dot) * a.scale;
      // The running sums are rescaled only when the max rises (uniform over the warp): the kernel
      // is bound by its instructions, and most keys leave the max where it is. A NaN logit never
      // rises and still reaches den and av through p.
      if (logit > m) {
        const float keep = expf(m - logit);  // 0 for the first key (m = -inf)
        den *= keep;
#pragma unroll
        for (int u = 0; u < kTiledKeyRegs; ++u) av[u] *= keep;
        m = logit;
      }
      const float p = expf(logit - m);
      den += p;
#pragma unroll
      for (int u = 0; u < kTiledKeyRegs; ++u) av[u] += p * kv[u];
    }
  }

  // Each warp's partial into its row of the (now free) tile.
  __syncthreads();
  if (active) {
#pragma unroll
    for (int u = 0; u < kTiledKeyRegs; ++u) {
      const int64_t d = lane + int64_t(u) * MP_WARP_SIZE;
      if (d < hd) tile[warp * hd + d] = av[u];
    }
    if (lane == 0) {
      warp_max[warp] = m;
      warp_den[warp] = den;
    }
  }
  __syncthreads();
  // Merge each head's shares with its sink (one more logit in the denominator that carries no
  // value) into the head's first row: thread (head, d) alone reads and writes column d of them.
  for (int64_t i = threadIdx.x; i < hb * hd; i += blockDim.x) {
    const int head = int(i / hd);
    const int64_t d = i % hd;
    const float sink = a.sink[h0 + head];
    float top = sink;
    for (int sh = 0; sh < shares; ++sh) top = fmaxf(top, warp_max[sh * hb + head]);
    float total = expf(sink - top), o = 0.0f;
    for (int sh = 0; sh < shares; ++sh) {
      const float w = expf(warp_max[sh * hb + head] - top);  // 0 for a share that saw no key
      total += warp_den[sh * hb + head] * w;
      o += tile[(sh * hb + head) * hd + d] * w;
    }
    tile[head * hd + d] = o / total;
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < hb * hd; i += blockDim.x) {
    const int head = int(i / hd);
    const int64_t d = i % hd;
    a.out[(s * a.H + h0 + head) * hd + d] = unrotated_output(a, tile + head * hd, pos, d);
  }
}

}  // namespace moepage::ds4::gpu
