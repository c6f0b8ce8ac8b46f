// Weight products over many tokens on the matrix cores for the dense projections (prefill): one
// block computes a tile of 128 stored weight rows by 64 (or 32) tokens over steps of 64 columns.
// Each step the block's threads decode their share of the stored weight bytes (FP8, FP4 or BF16)
// with the block scales into bf16 in shared memory, in the columns' natural order, and round the
// token tile beside it (split mode: x's rounding and what it left, two tiles; mma_operands.hpp
// says why); the 8 warps (4 along the rows by 2 along the tokens, 32 rows by BN/2 tokens each)
// read both operands with ldmatrix. With a whole token tile behind every weight, a warp's
// fragments are each used four times from registers. The next step's bytes are loaded into
// registers while this step multiplies, so memory latency hides behind the arithmetic.
//
// The natural order here, not the k order of the experts' register tile (mma_tile.hpp): both
// operands pass through shared memory and ldmatrix, so no order saves a shuffle, and the byte-permute
// FP4 decode below writes whole 16-byte groups with fewer live registers; measured on the H200, the
// k-ordered staged tile was 13% slower (bench/results/2026-12-03-register-tiles.md).
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

// Four e2m1 codes (the low 16 bits of `codes`, low nibble first) as two bf16 pairs, times the
// block scale `scale2` (its bf16 in both halves): the magnitudes from two byte-permute tables (the
// low and the high byte of each of the eight bf16 values 0, 0.5, 1, 1.5, 2, 3, 4, 6), the signs
// moved from bit 3 of each nibble to bit 15 of each value, then one exact multiply per pair.
// About a third of the float decode's instructions (raw decode, two multiplies, a permute).
__device__ inline void fp4x4_to_bf16(uint32_t codes, uint32_t scale2, uint32_t& v01, uint32_t& v23) {
  const uint32_t sel = codes & 0x7777u;
  const uint32_t lo = __byte_perm(0xC0800000u, 0xC0804000u, sel), hi = __byte_perm(0x3F3F3F00u, 0x40404040u, sel);
  const uint32_t signs = codes & 0x8888u;  // bits 3, 7, 11, 15
  const uint32_t s01 = ((signs << 12) | (signs << 24)) & 0x80008000u;
  const uint32_t s23 = ((signs << 4) | (signs << 16)) & 0x80008000u;
  v01 = mma::mul_bf16x2(__byte_perm(lo, hi, 0x5140) | s01, scale2);
  v23 = mma::mul_bf16x2(__byte_perm(lo, hi, 0x7362) | s23, scale2);
}

// One stored 16-byte chunk of a weight row (chunk index `chunk` of its row, whose scale bytes
// start at row_scale) as its elems_per_chunk<W>() bf16 values in the columns' natural order, at
// dst (16-byte aligned). BF16 bytes stay as they are; FP4 codes go through fp4x4_to_bf16. FP8
// codes take the raw decode (the value times 2^-shift, row_dot.hpp) and two exact multiplies (half
// the shift, then the block scale with the other half, so no factor overflows a float); the
// product has at most 4 significant bits, so its top 16 bits are its bf16 bits exactly (NaN stays
// NaN). The staged tile stores its steps with it, and the library products (library_gemm.hpp)
// dequantize whole weights with it, so both multiply the same bf16 weights.
template <WeightCode W>
__device__ inline void chunk_to_bf16(const uint4& q, const uint8_t* row_scale, int64_t chunk, uint4* dst) {
  constexpr int kElems = elems_per_chunk<W>();
  if constexpr (W == WeightCode::BF16) {
    *dst = q;
  } else if constexpr (W == WeightCode::FP4) {
    const uint32_t scale2 = e8m0_bf16x2(row_scale[chunk]);
    const uint32_t words[4] = {q.x, q.y, q.z, q.w};
    uint32_t packed[16];
#pragma unroll
    for (int wd = 0; wd < 4; ++wd) {
      fp4x4_to_bf16(words[wd], scale2, packed[4 * wd], packed[4 * wd + 1]);
      fp4x4_to_bf16(words[wd] >> 16, scale2, packed[4 * wd + 2], packed[4 * wd + 3]);
    }
#pragma unroll
    for (int v = 0; v < 4; ++v)
      dst[v] = make_uint4(packed[4 * v], packed[4 * v + 1], packed[4 * v + 2], packed[4 * v + 3]);
  } else {
    constexpr float lift = pow2(kFp8RawShift / 2);
    const float factor = chunk_scale<W>(q, row_scale, chunk) * pow2(kFp8RawShift - kFp8RawShift / 2);
    uint32_t packed[kElems / 2];
    static_for<kElems / 4>([&](auto seg) {
      constexpr int S = decltype(seg)::value;
      float w[4];
      decode4<W, S>(q, w);
      packed[2 * S] = __byte_perm(__float_as_uint(w[0] * lift * factor), __float_as_uint(w[1] * lift * factor), 0x7632);
      packed[2 * S + 1] =
          __byte_perm(__float_as_uint(w[2] * lift * factor), __float_as_uint(w[3] * lift * factor), 0x7632);
    });
#pragma unroll
    for (int v = 0; v < kElems / 8; ++v)
      dst[v] = make_uint4(packed[4 * v], packed[4 * v + 1], packed[4 * v + 2], packed[4 * v + 3]);
  }
}

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
  __device__ void store(int64_t step, uint16_t* a) const {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j)
      chunk_to_bf16<W>(q[j], scale[j], (step * kMmaK + col[j]) / kElems, reinterpret_cast<uint4*>(a + smem_at[j]));
  }
};

// This thread's share of the token tile: float4s of up to BN token rows (absent rows are zero).
template <int BN>
struct MmaStagedTokenLoader {
  static constexpr int kPerThread = BN * kMmaK / 4 / kMmaThreads;  // 4 or 2
  const float* row[kPerThread];
  int smem_at[kPerThread];
  float4 v[kPerThread];

  template <class XRow>
  __device__ void setup(XRow xrow, int n_tokens) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int idx = int(threadIdx.x) + j * kMmaThreads;
      const int t = idx / (kMmaK / 4), c4 = idx % (kMmaK / 4);
      row[j] = t < n_tokens ? xrow(t) + 4 * c4 : nullptr;
      smem_at[j] = t * kMmaPitch + 4 * c4;
    }
  }
  __device__ void load(int64_t step) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j)
      v[j] = row[j] ? *reinterpret_cast<const float4*>(row[j] + step * kMmaK) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  template <bool Split>
  __device__ void store(uint16_t (&b)[Split ? 2 : 1][BN * kMmaPitch]) const {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      // The paired conversion instruction: a fifth of the integer rounding's instructions, and
      // every block of a product converts its token tile again.
      const uint32_t h01 = mma::pack_bf16x2(v[j].x, v[j].y), h23 = mma::pack_bf16x2(v[j].z, v[j].w);
      *reinterpret_cast<uint2*>(b[0] + smem_at[j]) = make_uint2(h01, h23);
      if constexpr (Split) {
        const float r0 = v[j].x - __uint_as_float(h01 << 16), r1 = v[j].y - __uint_as_float(h01 & 0xFFFF0000u);
        const float r2 = v[j].z - __uint_as_float(h23 << 16), r3 = v[j].w - __uint_as_float(h23 & 0xFFFF0000u);
        *reinterpret_cast<uint2*>(b[1] + smem_at[j]) = make_uint2(mma::pack_bf16x2(r0, r1), mma::pack_bf16x2(r2, r3));
      }
    }
  }
};

// One step of 64 columns from the shared tiles into this warp's 32 x BN/2 accumulators.
template <bool Split, int BN>
__device__ inline void mma_staged_step(const MmaStagedShared<Split, BN>& sh, int wm, int wn, int lane,
                                       float (&acc)[2][BN / 16][4]) {
  constexpr int parts = Split ? 2 : 1, NT = BN / 16, warp_tokens = BN / 2;
#pragma unroll
  for (int ks = 0; ks < kMmaK / 16; ++ks) {
    uint32_t a[2][4], b[parts][NT / 2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
      mma::load_x4(a[mt],
                   sh.a + (wm * kMmaStagedWarpRows + mt * 16 + lane % 16) * kMmaPitch + ks * 16 + (lane / 16) * 8);
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
__device__ inline void mma_staged_block(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows,
                                        int64_t cols, XRow xrow, int n_tokens, Store store) {
  static_assert(BN == kMmaTokens || BN == kMmaFewTokens, "a token tile of 64 or 32");
  constexpr int NT = BN / 16;
  __shared__ MmaStagedShared<Split, BN> sh;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int wm = warp % 4, wn = warp / 4;
  MmaStagedWeightLoader<W> wl;
  wl.template setup<Pair>(m0, m1, row0, n_rows, cols);
  MmaStagedTokenLoader<BN> tl;
  tl.setup(xrow, n_tokens);
  float acc[2][NT][4] = {};

  const int64_t steps = cols / kMmaK;
  wl.load(0);
  tl.load(0);
  wl.store(0, sh.a);
  tl.store<Split>(sh.b);
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
      tl.store<Split>(sh.b);
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
