// Weight products over many tokens on the matrix cores for the dense projections (prefill): one
// block computes a tile of 128 stored weight rows by 64 tokens over steps of 64 columns. Each step
// the block decodes its weight tile into shared memory as bf16 pairs and rounds its token tile
// beside it, both in the k order of mma_operands.hpp, and its 8 warps (4 along the rows by 2
// along the tokens, 32 rows by 32 tokens each) read both operands with ldmatrix. With a whole
// token tile behind every weight, a warp's fragments are each used four times from registers;
// the routed experts, whose tiles hold few tokens, take the register tile (mma_tile.hpp).
//
// Pair mode multiplies two matrices of the same shape (the shared expert's w1 and w3): the shared
// rows alternate in 16-row bands between them, so a warp's two fragments are the same rows of
// both and the SwiGLU of a row is formed in the registers that hold both sums. For .hip files only.
#pragma once
#include <cstdint>

#include "deepseek4/hip/mma_operands.hpp"

namespace moepage::ds4::gpu {

constexpr int kMmaStagedRows = 128;     // stored weight rows per block tile (pair mode: 64 of each)
constexpr int kMmaStagedWarpRows = 32;  // a warp's rows: two 16-row fragments
// A warp's tokens are half the tile's: BN / 16 fragments of 8 tokens.

#if defined(MOEPAGE_GPU_NVIDIA)

template <bool Split, int BN>
struct MmaStagedShared {
  uint16_t a[kMmaStagedRows * kMmaPitch];
  uint16_t b[Split ? 2 : 1][BN * kMmaPitch];  // x rounded, then (split) what the rounding left
};

// This thread's share of the weight tile: whole 16-byte chunks of the stored rows.
template <WeightCode W>
struct MmaStagedWeightLoader {
  static constexpr int kChunksPerRow = int(row_bytes_of(W, kMmaK) / 16);  // FP8 4, FP4 2, BF16 8
  static constexpr int kPerThread = kMmaStagedRows * kChunksPerRow / kMmaThreads;
  static constexpr int kElems = elems_per_chunk<W>();
  const uint4* row[kPerThread];
  const uint8_t* scale[kPerThread];
  int smem_at[kPerThread];  // first bf16 of the chunk in the shared tile
  int col[kPerThread];      // its first column within a step
  uint4 q[kPerThread];

  // Pair: shared rows in 16-row bands alternate between m0 (even bands) and m1 (odd), both from
  // stored row row0 + 16 * (band / 2); else all from m0 at row0. Rows past n_rows repeat the last.
  template <bool Pair>
  __device__ void setup(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows, int64_t cols) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int idx = int(threadIdx.x) + j * kMmaThreads;
      const int srow = idx / kChunksPerRow, chunk = idx % kChunksPerRow;
      const DeviceMat& m = Pair && ((srow / 16) % 2 == 1) ? m1 : m0;
      int64_t r = Pair ? row0 + (srow / 32) * 16 + srow % 16 : row0 + srow;
      if (r >= n_rows) r = n_rows - 1;
      const int64_t stored = m.row_offset + r;
      row[j] = reinterpret_cast<const uint4*>(m.data + stored * row_bytes<W>(cols)) + chunk;
      scale[j] = has_block_scale<W>() ? m.scale + scale_row_offset<W>(stored, cols) : nullptr;
      smem_at[j] = srow * kMmaPitch + chunk * kElems;
      col[j] = chunk * kElems;
    }
  }
  __device__ void load(int64_t step) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) q[j] = row[j][step * kChunksPerRow];
  }
  // Each chunk goes to shared memory as bf16 pairs in k order, one 8-column group per 16 bytes.
  __device__ void store(int64_t step, uint16_t* a) const {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      uint4* dst = reinterpret_cast<uint4*>(a + smem_at[j]);
      const uint32_t w[4] = {q[j].x, q[j].y, q[j].z, q[j].w};
      uint32_t out[4];
      if constexpr (W == WeightCode::BF16) {
        bf16_group_to_pairs(w, out);
        dst[0] = make_uint4(out[0], out[1], out[2], out[3]);
      } else if constexpr (W == WeightCode::FP4) {  // 32 columns, one scale
        const Fp4Scale s(scale[j][(step * kMmaK + col[j]) / 32]);
#pragma unroll
        for (int grp = 0; grp < 4; ++grp) {
          if (s.big) fp4_group_to_bf16<true>(w[grp], s, out);
          else fp4_group_to_bf16<false>(w[grp], s, out);
          dst[grp] = make_uint4(out[0], out[1], out[2], out[3]);
        }
      } else {  // FP8: 16 columns inside one 128-column scale block
        const uint8_t sc = scale[j][(step * kMmaK + col[j]) / 128];
#pragma unroll
        for (int grp = 0; grp < 2; ++grp) {
          fp8_group_to_bf16(w[2 * grp], w[2 * grp + 1], fp8_group_factor(sc, w[2 * grp], w[2 * grp + 1]), out);
          dst[grp] = make_uint4(out[0], out[1], out[2], out[3]);
        }
      }
    }
  }
};

// One step of 64 columns from the shared tiles into this warp's 32 x BN/2 accumulators.
template <bool Split, int BN>
__device__ inline void mma_staged_step(const MmaStagedShared<Split, BN>& sh, int wm, int wn, int lane, float (&acc)[2][BN / 16][4]) {
  constexpr int parts = Split ? 2 : 1, NT = BN / 16, warp_tokens = BN / 2;
#pragma unroll
  for (int ks = 0; ks < kMmaK / 16; ++ks) {
    uint32_t a[2][4], b[parts][NT / 2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
      mma::load_x4(a[mt], sh.a + (wm * kMmaStagedWarpRows + mt * 16 + lane % 16) * kMmaPitch + ks * 16 + (lane / 16) * 8);
#pragma unroll
    for (int p = 0; p < parts; ++p)
#pragma unroll
      for (int h = 0; h < NT / 2; ++h)
        mma::load_x4(b[p][h], sh.b[p] + (wn * warp_tokens + h * 16 + lane % 8 + (lane / 16) * 8) * kMmaPitch + ks * 16 +
                                  ((lane / 8) % 2) * 8);
#pragma unroll
    for (int p = parts - 1; p >= 0; --p)  // the small parts first
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          mma::mma_bf16(acc[mt][nt], a[mt], b[p][nt / 2][(nt % 2) * 2], b[p][nt / 2][(nt % 2) * 2 + 1]);
  }
}

// The block's tile: rows [row0, row0 + 128) of m0 (pair mode: [row0, row0 + 64) of m0 and of m1)
// by the tokens xrow(0 .. n_tokens-1) (n_tokens <= BN, 64 or 32), over `cols` columns (a
// multiple of 64).
// Every valid (row, token) reaches store(row, t, sum) (pair mode: store(row, t, sum0, sum1)),
// called by exactly one thread. Rows at or past n_rows are not stored.
template <WeightCode W, bool Pair, bool Split, int BN, class XRow, class Store>
__device__ inline void mma_staged_block(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows, int64_t cols,
                                 XRow xrow, int n_tokens, Store store) {
  static_assert(BN == kMmaTokens || BN == kMmaFewTokens, "a token tile of 64 or 32");
  constexpr int NT = BN / 16;
  __shared__ MmaStagedShared<Split, BN> sh;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int wm = warp % 4, wn = warp / 4;
  MmaStagedWeightLoader<W> wl;
  wl.template setup<Pair>(m0, m1, row0, n_rows, cols);
  MmaTokenLoader<BN> tl;
  tl.setup(xrow, n_tokens);
  float acc[2][NT][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;

  const int64_t steps = cols / kMmaK;
  wl.load(0);
  tl.load(0);
  wl.store(0, sh.a);
  tl.template store<Split>(sh.b);
  __syncthreads();
  for (int64_t s = 0; s < steps; ++s) {
    const bool more = s + 1 < steps;
    if (more) {
      wl.load(s + 1);
      tl.load(s + 1);
    }
    mma_staged_step<Split, BN>(sh, wm, wn, lane, acc);
    __syncthreads();
    if (more) {
      wl.store(s + 1, sh.a);
      tl.template store<Split>(sh.b);
      __syncthreads();
    }
  }

  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int t = wn * (BN / 2) + nt * 8 + 2 * q + (e & 1);
      if (t >= n_tokens) continue;
      if constexpr (Pair) {
        const int64_t r = row0 + wm * 16 + g + (e >= 2 ? 8 : 0);
        if (r < n_rows) store(r, t, acc[0][nt][e], acc[1][nt][e]);
      } else {
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          const int64_t r = row0 + wm * kMmaStagedWarpRows + mt * 16 + g + (e >= 2 ? 8 : 0);
          if (r < n_rows) store(r, t, acc[mt][nt][e]);
        }
      }
    }
}

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
