// The single-token FP4 product on fp16 operands (decode, ExpertPrecision::Fp16, under
// arch.matrix_single_token): each warp owns 16 stored rows (pair mode: 8 rows of w1 and the same
// 8 of w3) across its columns, so its sums need no shared memory but the token's. A lane reads
// 16 contiguous bytes of a row per 128-column step (32 columns: one FP4 scale byte; a last step
// of 64 columns leaves lanes q = 2, 3 idle with zeros), decodes them straight into fp16 pairs
// (fp4_group_to_f16: about two instructions a weight with the matrix instructions, against about
// five on the CUDA cores, row_gemv.hpp) and feeds the matrix cores; the next chunks' loads stay in
// flight while one chunk is decoded, and the first ones are issued before the token is staged.
//
// Measured (H100, 2026-12-06): decode 1-3.3% slower than with the CUDA-core kernels: fewer
// instructions, but the warps then wait on their loads (long-scoreboard stalls, 17% achieved
// occupancy). It replaced mma_gemv.hpp for FP4 experts on fp16 operands, which was 7-8% slower
// than the CUDA cores (bench/results/2026-12-06-decode-kernels.md).
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
template <int CH>
struct Fp4GemvChunk {
  uint4 w[CH][2];
  uint8_t sc[CH][2];
};

// One warp's share of a product: rows [row0, row0 + 16) of m0 (pair mode: [row0, row0 + 8) of
// m0 and of m1) over the 128-column steps of `cols` columns (a multiple of 64, fp4_gemv_cols_ok),
// against the token in xs (stage_token_f16). CH steps make a chunk; DEPTH chunks of registers take
// turns, the next DEPTH - 1 chunks' loads in flight while one is decoded. prefetch() issues the first ones (before the
// token is staged, so that their latency hides the staging's); run() does the rest and adds the sums into acc: lane (g,
// q) holds row g's sum in acc[0] and row g + 8's (pair mode: m1's row g) in acc[2], the same in every q. A scale past
// fp16's range is recorded in *scale_fault (fault_key | the scale byte) and its weights decode to NaN.
template <int CH, int DEPTH>
struct Fp4GemvWarp {
  const uint8_t* row[2];
  const uint8_t* scale[2];
  int64_t steps, chunks;
  int q;
  bool half_last;  // the last step of the row has 64 columns: lanes q = 2, 3 idle there
  Fp4GemvChunk<CH> buf[DEPTH];

  template <bool Pair>
  __device__ Fp4GemvWarp(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows, int64_t cols,
                         std::integral_constant<bool, Pair>) {
    const int lane = int(threadIdx.x) % 32, g = lane / 4;
    q = lane % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // lane row g (h = 0) and g + 8 (h = 1) of the mma's 16
      const DeviceMat& m = Pair && h == 1 ? m1 : m0;
      int64_t r = row0 + g + (Pair ? 0 : 8 * h);
      if (r >= n_rows) r = n_rows - 1;  // repeated, never stored
      const int64_t stored = m.row_offset + r;
      row[h] = m.data + stored * (cols / 2) + 16 * q;
      scale[h] = m.scale + stored * (cols / 32) + q;
    }
    steps = (cols + kFp4GemvCols - 1) / kFp4GemvCols;
    half_last = cols % kFp4GemvCols != 0;
    chunks = (steps + CH - 1) / CH;
  }
  // Whether this lane's 32 columns of `step` exist.
  __device__ bool live(int64_t step) const { return q < 2 || !half_last || step + 1 < steps; }

  template <int B>
  __device__ void load(int64_t chunk) {
#pragma unroll
    for (int s = 0; s < CH; ++s) {
      const int64_t step = chunk * CH + s;
      if (step >= steps) break;
      const bool on = live(step);
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // an idle lane's zeros, at a scale of 1, add nothing
        buf[B].w[s][h] =
            on ? *reinterpret_cast<const uint4*>(row[h] + step * (kFp4GemvCols / 2)) : make_uint4(0, 0, 0, 0);
        buf[B].sc[s][h] = on ? scale[h][step * (kFp4GemvCols / 32)] : uint8_t(127);
      }
    }
  }

  // Lane (g, q)'s 32 columns of a step, 128 * step + 32q onward, as two halves of 16: half j's 8
  // pairs of each row and of x in k order, four matrix instructions of 16 k each.
  template <int B>
  __device__ void multiply(int64_t chunk, const uint4* xs, unsigned long long* scale_fault,
                           unsigned long long fault_key, float (&acc)[4]) const {
    const Fp4GemvChunk<CH>& c = buf[B];
#pragma unroll
    for (int s = 0; s < CH; ++s) {
      const int64_t step = chunk * CH + s;
      if (step >= steps) break;  // the same for every lane
      const bool on = live(step);
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
          const uint4 zero = make_uint4(0, 0, 0, 0), x0 = on ? xs[grp] : zero, x1 = on ? xs[grp + 1] : zero;
          const uint32_t bv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
          for (int sl = 0; sl < 4; ++sl) {
            const uint32_t frag[4] = {a[0][2 * sl], a[1][2 * sl], a[0][2 * sl + 1], a[1][2 * sl + 1]};
            mma::mma_f16(acc, frag, bv[2 * sl], bv[2 * sl + 1]);
          }
        }
      });
    }
  }

  __device__ void prefetch() {
    static_for<DEPTH - 1>([&](auto b) {
      if (b < chunks) load<decltype(b)::value>(b);
    });
  }

  // Chunk k sits in buffer k % DEPTH: before decoding it, the loads of chunk k + DEPTH - 1 go into
  // the buffer chunk k - 1 left.
  __device__ void run(const uint4* xs, unsigned long long* scale_fault, unsigned long long fault_key, float (&acc)[4]) {
    for (int64_t k0 = 0; k0 < chunks; k0 += DEPTH) {
      bool done = false;
      static_for<DEPTH>([&](auto d) {
        constexpr int D = decltype(d)::value;
        const int64_t k = k0 + D;
        if (done || k >= chunks) {
          done = true;
          return;
        }
        if (k + DEPTH - 1 < chunks) load<(D + DEPTH - 1) % DEPTH>(k + DEPTH - 1);
        multiply<D>(k, xs, scale_fault, fault_key, acc);
      });
    }
  }
};

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
