// The single-token FP4 product on fp16 operands (decode, ExpertPrecision::Fp16): each warp owns
// 16 stored rows (pair mode: 8 rows of w1 and the same 8 of w3) across every column, so its sums
// need no other warp and no shared memory but the token. A lane reads 16 contiguous bytes of a row
// per 128-column step (32 columns: one FP4 scale byte; a last step of 64 columns leaves lanes
// q = 2, 3 idle with zeros), decodes them straight into fp16 pairs
// (fp4_group_to_f16: about 1.7 instructions a weight) and feeds the matrix cores; the warp keeps
// the loads of its next chunk of steps in flight while it decodes the current one.
//
// Why not mma_gemv.hpp: there each warp takes an eighth of the columns and loads them all at once,
// then waits, then decodes, so a block's bytes are in flight only in bursts, and the warps' sums
// meet in shared memory; with x in two bf16 parts every weight costs two matrix instructions. On
// the CUDA cores (row_gemv.hpp) an FP4 weight costs about five instructions, which bounds those
// kernels to 1.5-1.7 TB/s (bench/results/2026-12-04-gemv-ring.md).
//
// The token arrives as fp16 pairs in the tiles' k order in shared memory (stage_token_f16), the
// rounding the prefill's fp16 tiles make. For .hip files only.
#pragma once
#include <cstdint>
#include <type_traits>

#include "deepseek4/hip/mma_operands.hpp"

namespace moepage::ds4::gpu {

constexpr int kFp4GemvCols = 128;                    // columns per step: 16 bytes of a row per lane
constexpr int kFp4GemvWarps = 4;                     // warps per block
constexpr int kFp4GemvThreads = 32 * kFp4GemvWarps;  // threads per block
constexpr int kFp4GemvChunk = 4;                     // steps per chunk: 128 bytes a lane in flight

// Whether a part of `cols` columns suits the kernel (whole 64-column halves of steps, and the
// token's fp16 copy in the 48 KiB of shared memory a launch gets unasked).
inline bool fp4_gemv_cols_ok(int64_t cols) {
  return cols > 0 && cols % (kFp4GemvCols / 2) == 0 && cols * 2 <= 48 * 1024;
}

#if defined(MOEPAGE_GPU_NVIDIA)

// x (`cols` floats, 16-byte aligned) into xs as fp16 pairs, 8-column group i in xs[i] in the k
// order of mma_operands.hpp (pair p: columns p and p + 4). Every thread of the block calls it;
// ends with the barrier that publishes xs.
__device__ inline void stage_token_f16(const float* x, int64_t cols, uint4* xs) {
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (int64_t i = threadIdx.x; i < cols / 8; i += blockDim.x) {
    const float4 lo = x4[2 * i], hi = x4[2 * i + 1];
    xs[i] = make_uint4(mma::pack_f16x2(lo.x, hi.x), mma::pack_f16x2(lo.y, hi.y), mma::pack_f16x2(lo.z, hi.z),
                       mma::pack_f16x2(lo.w, hi.w));
  }
  __syncthreads();
}

// One warp's loads of a chunk: per step s and row half h, 16 bytes of weights and their scale.
struct Fp4GemvChunk {
  uint4 w[kFp4GemvChunk][2];
  uint8_t sc[kFp4GemvChunk][2];
};

// Rows [row0, row0 + 16) of m0 (pair mode: [row0, row0 + 8) of m0 and of m1) against the token in
// xs (stage_token_f16), by one warp. cols: a multiple of 64 (fp4_gemv_cols_ok). A scale past fp16's range
// is recorded in *scale_fault (fault_key | the scale byte) and its weights decode to NaN. Each
// valid row reaches store(row, sum) (pair mode: store(row, sum0, sum1)) once, from lane q = 0.
template <bool Pair, class Store>
__device__ inline void fp4_gemv_f16_warp(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows,
                                         int64_t cols, const uint4* xs, unsigned long long* scale_fault,
                                         unsigned long long fault_key, Store store) {
  const int lane = int(threadIdx.x) % 32, g = lane / 4, q = lane % 4;
  const uint8_t* row[2];
  const uint8_t* scale[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {  // lane row g (h = 0) and g + 8 (h = 1) of the mma's 16
    const DeviceMat& m = Pair && h == 1 ? m1 : m0;
    int64_t r = row0 + g + (Pair ? 0 : 8 * h);
    if (r >= n_rows) r = n_rows - 1;  // repeated, never stored
    const int64_t stored = m.row_offset + r;
    row[h] = m.data + stored * (cols / 2) + 16 * q;
    scale[h] = m.scale + stored * (cols / 32) + q;
  }
  const int64_t steps = (cols + kFp4GemvCols - 1) / kFp4GemvCols;
  const int64_t chunks = (steps + kFp4GemvChunk - 1) / kFp4GemvChunk;
  // Whether this lane's 32 columns of `step` exist: all but lanes q = 2, 3 of a last half step.
  const bool half_last = cols % kFp4GemvCols != 0;
  auto lane_live = [&](int64_t step) { return q < 2 || !half_last || step + 1 < steps; };
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};

  auto load = [&](Fp4GemvChunk& c, int64_t chunk) {
#pragma unroll
    for (int s = 0; s < kFp4GemvChunk; ++s) {
      const int64_t step = chunk * kFp4GemvChunk + s;
      if (step >= steps) break;
      const bool live = lane_live(step);
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // an idle lane's zeros, at a scale of 1, add nothing
        c.w[s][h] = live ? *reinterpret_cast<const uint4*>(row[h] + step * (kFp4GemvCols / 2)) : make_uint4(0, 0, 0, 0);
        c.sc[s][h] = live ? scale[h][step * (kFp4GemvCols / 32)] : uint8_t(127);
      }
    }
  };
  // Lane (g, q)'s 32 columns of a step, 128 * step + 32q onward, as two halves of 16: half j's
  // 8 pairs of each row and of x in k order, four matrix instructions of 16 k each.
  auto multiply = [&](const Fp4GemvChunk& c, int64_t chunk) {
#pragma unroll
    for (int s = 0; s < kFp4GemvChunk; ++s) {
      const int64_t step = chunk * kFp4GemvChunk + s;
      if (step >= steps) break;  // the same for every lane
      with_fp4_half_scale_list<true>(c.sc[s], scale_fault, fault_key, [&](const Fp4HalfScale(&hs)[2], auto big) {
        constexpr bool Big = decltype(big)::value;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          uint32_t a[2][8];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint32_t w0 = j == 0 ? c.w[s][h].x : c.w[s][h].z, w1 = j == 0 ? c.w[s][h].y : c.w[s][h].w;
            uint32_t lo[4], hi[4];
            fp4_group_to_f16<Big>(w0, hs[h], lo);
            fp4_group_to_f16<Big>(w1, hs[h], hi);
#pragma unroll
            for (int p = 0; p < 4; ++p) a[h][p] = lo[p], a[h][4 + p] = hi[p];
          }
          const int64_t grp = step * (kFp4GemvCols / 8) + 4 * q + 2 * j;
          const bool live = lane_live(step);
          const uint4 x0 = live ? xs[grp] : make_uint4(0, 0, 0, 0), x1 = live ? xs[grp + 1] : make_uint4(0, 0, 0, 0);
          const uint32_t bv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
          for (int sl = 0; sl < 4; ++sl) {
            const uint32_t frag[4] = {a[0][2 * sl], a[1][2 * sl], a[0][2 * sl + 1], a[1][2 * sl + 1]};
            mma::mma_f16(acc, frag, bv[2 * sl], bv[2 * sl + 1]);
          }
        }
      });
    }
  };

  // Two chunks of registers in turn: the next chunk's loads are issued before the current one's
  // decode, so they are in flight while it runs.
  Fp4GemvChunk c0, c1;
  load(c0, 0);
  for (int64_t k = 0; k < chunks; k += 2) {
    if (k + 1 < chunks) load(c1, k + 1);
    multiply(c0, k);
    if (k + 1 >= chunks) break;
    if (k + 2 < chunks) load(c0, k + 2);
    multiply(c1, k + 1);
  }

  // Every column of B is x, so lane (g, q) holds row g's sum in acc[0] and row g + 8's in acc[2].
  if (q != 0) return;
  if constexpr (Pair) {
    if (row0 + g < n_rows) store(row0 + g, acc[0], acc[2]);
  } else {
    if (row0 + g < n_rows) store(row0 + g, acc[0]);
    if (row0 + g + 8 < n_rows) store(row0 + g + 8, acc[2]);
  }
}

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
