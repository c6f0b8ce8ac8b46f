// The single-token weight product on the matrix cores (decode): one block computes 16 stored rows
// (pair mode: 8 rows of each of two matrices) against one token, its 8 warps each a slice of the
// columns. A lane decodes its 16 columns of two rows per 64-column step into bf16 pairs (the A
// operand, as the register tile does, mma_tile.hpp) and the token's x, rounded into bf16 pairs in
// shared memory by the warp, is the B operand; only the product's first column is used.
//
// Why: on the CUDA cores a single-token FP4 product spends about five instructions per weight
// (decode to float, multiply-add, sums), so it issues on half the cycles and reaches 1.4-1.7 TB/s
// of the H200's 4.8. Here a weight costs its share of the bf16 decode (about two instructions) and
// 1/16 of a matrix instruction, and the sums are the matrix cores'. Each warp issues the loads of
// up to 128 bytes per lane before it decodes any, so every multiprocessor keeps tens of kilobytes
// in flight. The warps' partial sums meet in shared memory and are added in warp order (the same
// bits every run). For .hip files only.
#pragma once
#include <cstdint>
#include <type_traits>

#include "deepseek4/hip/mma_operands.hpp"

namespace moepage::ds4::gpu {

constexpr int kGemvMmaRows = 16;  // stored rows per block (pair mode: 8 of each matrix)
constexpr int kGemvMmaWarps = kMmaThreads / 32;

// Steps of 64 columns whose weights a warp loads before decoding: 128 bytes per lane.
__host__ __device__ constexpr int gemv_mma_steps(WeightCode w) {
  return w == WeightCode::FP4 ? 8 : w == WeightCode::FP8 ? 4 : 2;
}

#if defined(MOEPAGE_GPU_NVIDIA)

// The block's rows for lane row g (h = 0) and g + 8 (h = 1): pair mode, row0 + g of m0 and of m1
// (row0 counts output rows, 8 per block); else rows row0 + g and row0 + g + 8 of m0. Rows past
// n_rows repeat the last (their results are not stored).
template <WeightCode W>
struct GemvMmaRows {
  static constexpr int kLaneBytes = int(row_bytes_of(W, 16));
  static constexpr int kWords = kLaneBytes / 4;
  const uint8_t* row[2];
  const uint8_t* scale[2];

  template <bool Pair>
  __device__ GemvMmaRows(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows, int64_t cols, int g,
                         int q, std::integral_constant<bool, Pair>) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const DeviceMat& m = Pair && h == 1 ? m1 : m0;
      int64_t r = row0 + g + (Pair ? 0 : 8 * h);
      if (r >= n_rows) r = n_rows - 1;
      const int64_t stored = m.row_offset + r;
      row[h] = m.data + stored * row_bytes<W>(cols) + q * kLaneBytes;
      scale[h] = has_block_scale<W>() ? m.scale + scale_row_offset<W>(stored, cols) : nullptr;
    }
  }
  // Step `step`'s 16 columns of row h and their scale byte.
  __device__ void load(int64_t step, int h, int q, uint32_t (&raw)[kWords], uint8_t& sc) const {
    const uint8_t* p = row[h] + step * (4 * kLaneBytes);
    if constexpr (kWords == 2) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      raw[0] = v.x, raw[1] = v.y;
    } else {
#pragma unroll
      for (int c = 0; c < kWords / 4; ++c) {
        const uint4 v = reinterpret_cast<const uint4*>(p)[c];
        raw[4 * c] = v.x, raw[4 * c + 1] = v.y, raw[4 * c + 2] = v.z, raw[4 * c + 3] = v.w;
      }
    }
    sc = 0;
    if constexpr (W == WeightCode::FP4) sc = scale[h][2 * step + q / 2];
    else if constexpr (W == WeightCode::FP8) sc = scale[h][step / 2];
  }
};

// Row h's 16 columns as eight bf16 pairs in k order.
template <WeightCode W, bool Big>
__device__ inline void gemv_mma_decode(const uint32_t* raw, uint8_t sc, uint32_t (&a)[8]) {
#pragma unroll
  for (int grp = 0; grp < 2; ++grp) {
    uint32_t out[4];
    if constexpr (W == WeightCode::FP4) {
      fp4_group_to_bf16<Big>(raw[grp], Fp4Scale(sc), out);
    } else if constexpr (W == WeightCode::FP8) {
      fp8_group_to_bf16(raw[2 * grp], raw[2 * grp + 1], fp8_group_factor(sc, raw[2 * grp], raw[2 * grp + 1]), out);
    } else {
      bf16_group_to_pairs({raw[4 * grp], raw[4 * grp + 1], raw[4 * grp + 2], raw[4 * grp + 3]}, out);
    }
#pragma unroll
    for (int p = 0; p < 4; ++p) a[4 * grp + p] = out[p];
  }
}

// Rows [row0, row0 + 16) of m0 (pair mode: [row0, row0 + 8) of m0 and of m1) against the token x
// (`cols` floats, 16-byte aligned; cols a multiple of 64), launched with kMmaThreads threads. Each
// valid row reaches store(row, sum) (pair mode: store(row, sum0, sum1)) once.
template <WeightCode W, bool Pair, bool Split, class Store>
__device__ inline void mma_gemv_block(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows,
                                      int64_t cols, const float* x, Store store) {
  constexpr int parts = Split ? 2 : 1, MS = gemv_mma_steps(W);
  constexpr int kWords = GemvMmaRows<W>::kWords;
  // Per warp and part, the x of its current steps: 8-column groups of bf16 pairs in k order.
  __shared__ uint4 xs[kGemvMmaWarps][parts][gemv_mma_steps(WeightCode::FP4) * kMmaK / 8];
  __shared__ float red[kGemvMmaWarps][kGemvMmaRows];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, g = lane / 4, q = lane % 4;
  const GemvMmaRows<W> rows(m0, m1, row0, n_rows, cols, g, q, std::integral_constant<bool, Pair>{});
  const int64_t steps = cols / kMmaK;
  const int64_t s_begin = warp * steps / kGemvMmaWarps, s_end = (warp + 1) * steps / kGemvMmaWarps;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};

  for (int64_t c0 = s_begin; c0 < s_end; c0 += MS) {
    const int n = int(s_end - c0 < MS ? s_end - c0 : MS);
    uint32_t raw[MS][2][kWords];
    uint8_t sc[MS][2];
#pragma unroll
    for (int s = 0; s < MS; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (s < n) rows.load(c0 + s, h, q, raw[s][h], sc[s][h]);

    // x of these steps, 16 columns per lane, rounded into k-ordered pairs (and what the rounding
    // left); the previous steps' reads of xs are done first.
    __syncwarp();
    if (16 * lane < n * kMmaK) {
      const float4* src = reinterpret_cast<const float4*>(x + c0 * kMmaK + 16 * lane);
#pragma unroll
      for (int grp = 0; grp < 2; ++grp) {
        const float4 a = src[2 * grp], b = src[2 * grp + 1];
        const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        uint32_t hi[4], lo[4];
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          hi[p] = mma::pack_bf16x2(v[p], v[p + 4]);
          if constexpr (Split)
            lo[p] =
                mma::pack_bf16x2(v[p] - __uint_as_float(hi[p] << 16), v[p + 4] - __uint_as_float(hi[p] & 0xFFFF0000u));
        }
        xs[warp][0][2 * lane + grp] = make_uint4(hi[0], hi[1], hi[2], hi[3]);
        if constexpr (Split) xs[warp][1][2 * lane + grp] = make_uint4(lo[0], lo[1], lo[2], lo[3]);
      }
    }
    __syncwarp();

#pragma unroll
    for (int s = 0; s < MS; ++s) {
      if (s >= n) break;
      uint32_t a[2][8];
      bool big = false;
      if constexpr (W == WeightCode::FP4) big = Fp4Scale(sc[s][0]).big || Fp4Scale(sc[s][1]).big;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (big) gemv_mma_decode<W, true>(raw[s][h], sc[s][h], a[h]);
        else gemv_mma_decode<W, false>(raw[s][h], sc[s][h], a[h]);
      }
#pragma unroll
      for (int p = parts - 1; p >= 0; --p) {  // the small part first
        const uint4 lo4 = xs[warp][p][(s * kMmaK + 16 * q) / 8], hi4 = xs[warp][p][(s * kMmaK + 16 * q) / 8 + 1];
        const uint32_t bv[8] = {lo4.x, lo4.y, lo4.z, lo4.w, hi4.x, hi4.y, hi4.z, hi4.w};
#pragma unroll
        for (int sl = 0; sl < kMmaK / 16; ++sl) {
          const uint32_t frag[4] = {a[0][2 * sl], a[1][2 * sl], a[0][2 * sl + 1], a[1][2 * sl + 1]};
          mma::mma_bf16(acc, frag, bv[2 * sl], bv[2 * sl + 1]);
        }
      }
    }
  }

  // Every column of the product is x's, so lane (g, 0) holds row g's sum in acc[0] and row
  // g + 8's in acc[2].
  if (q == 0) {
    red[warp][g] = acc[0];
    red[warp][g + 8] = acc[2];
  }
  __syncthreads();
  const int t = int(threadIdx.x);
  auto total = [&](int i) {
    float v = 0.0f;
#pragma unroll
    for (int w = 0; w < kGemvMmaWarps; ++w) v += red[w][i];
    return v;
  };
  if constexpr (Pair) {
    if (t < kGemvMmaRows / 2 && row0 + t < n_rows) store(row0 + t, total(t), total(t + 8));
  } else {
    if (t < kGemvMmaRows && row0 + t < n_rows) store(row0 + t, total(t));
  }
}

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
