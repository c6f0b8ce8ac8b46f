// The routed FP4 experts' prefill tile on fp16 operands (ExpertPrecision::Fp16) with its operands
// streamed through shared memory: the same block, warps, k order and matrix instructions as
// mma_tile.hpp's mma_block, so the same bits, but where mma_block loads each step's weights into
// registers one step ahead and rounds the token tile from floats in every block, this one keeps
// kStreamStages - 1 steps of raw FP4 bytes and of fp16 token rows in flight with asynchronous
// copies (cp.async) into a ring of shared memory, and the block's scale bytes for every step
// arrive once, up front.
//
// Why: on the H100 the register tile moved about 1.3 TB/s of expert weights, each step waiting
// for a load issued one step before, and with the same instructions this tile took w1/w3 from
// 6.7 to 5.4 ms of a 1,024-token batch (bench/results/2026-12-06-streamed-experts.md). The token
// rows arrive already rounded (round_tokens_f16, or the w1/w3 tile's own fp16 output for w2), in
// the tile's k order, so a block copies them as they are.
//
// Shared memory of a block (dynamic): the scale bytes, 256 rows of cols / 32 padded by 16 bytes
// (so the eight rows a lane group reads fall in different banks), then kStreamStages stages, each
// 256 rows of one step's 32 FP4 bytes and the BN-token tile (kMmaPitch fp16 per token).
// For .hip files only.
#pragma once
#include <cstdint>

#include "deepseek4/hip/mma_tile.hpp"

namespace moepage::ds4::gpu {

constexpr int kStreamStages = 4;                   // steps in the ring: three in flight while one multiplies
constexpr int kStreamRowBytes = kMmaK / 2;         // one FP4 row's bytes per step
constexpr int64_t kStreamSharedLimit = 112 << 10;  // two 32-token blocks fit a multiprocessor

__host__ __device__ constexpr int64_t stream_scale_pitch(int64_t cols) { return cols / 32 + 16; }
__host__ __device__ constexpr int64_t stream_stage_bytes(int bn) {
  return int64_t(kMmaRows) * kStreamRowBytes + int64_t(bn) * kMmaPitch * 2;
}
__host__ __device__ constexpr int64_t stream_shared_bytes(int bn, int64_t cols) {
  return kMmaRows * stream_scale_pitch(cols) + kStreamStages * stream_stage_bytes(bn);
}
// Rows of `cols` columns the tile takes: whole steps, scale rows of whole 4-byte words, and the
// 64-token block's shared memory within kStreamSharedLimit.
inline bool stream_cols_ok(int64_t cols) {
  return cols > 0 && cols % 128 == 0 && stream_shared_bytes(kMmaTokens, cols) <= kStreamSharedLimit;
}

// Column c of an 8-column group sits at this place of the group's fp16 values in the tile's k
// order (pairs of columns p and p + 4, mma_operands.hpp).
__host__ __device__ constexpr int64_t k_order_place(int64_t c) {
  return (c & ~int64_t(7)) | (c & 3) << 1 | (c >> 2 & 1);
}

#if defined(MOEPAGE_GPU_NVIDIA)

// Local row L of the block's 256 (L = 32 warp + 16 fragment + i, the rows mma_block gives warp
// `warp`): its matrix and stored row, clamped to the last row as mma_block does.
template <bool Pair>
__device__ inline int64_t stream_stored_row(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows,
                                            int L, const DeviceMat*& m) {
  const int f = L / 16 % 2;
  m = Pair && f == 1 ? &m1 : &m0;
  int64_t r = Pair ? row0 + L / 32 * 16 + L % 16 : row0 + L;
  if (r >= n_rows) r = n_rows - 1;
  return m->row_offset + r;
}

// One step of 64 columns as mma_step multiplies it (the same products into each accumulator in the
// same order: k slices 0 .. 3), each 8-column group of the lane's words decoded just before the
// two k slices that use it, so that half the decoded registers are live at a time.
template <int BN, int NTU, bool Guard, bool Big>
__device__ inline void stream_step(const uint16_t* tile, const uint32_t (&words)[2][2][2],
                                   const Fp4HalfScale (&s)[2][2], int n_tokens, int g, int q,
                                   float (&acc)[2][BN / 8][4]) {
#pragma unroll
  for (int grp = 0; grp < 2; ++grp) {
    uint32_t a[2][2][4];
#pragma unroll
    for (int f = 0; f < 2; ++f)
#pragma unroll
      for (int h = 0; h < 2; ++h) fp4_group_to_f16<Big>(words[f][h][grp], s[f][h], a[f][h]);
#pragma unroll
    for (int nt = 0; nt < NTU; ++nt) {
      if (Guard && nt * 8 >= n_tokens) break;
      const uint4 b = reinterpret_cast<const uint4*>(tile + (nt * 8 + g) * kMmaPitch + q * 16)[grp];
      const uint32_t bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int k = 0; k < 2; ++k)
#pragma unroll
        for (int f = 0; f < 2; ++f) {
          const uint32_t frag[4] = {a[f][0][2 * k], a[f][1][2 * k], a[f][0][2 * k + 1], a[f][1][2 * k + 1]};
          mma::mma_f16(acc[f][nt], frag, bv[2 * k], bv[2 * k + 1]);
        }
    }
  }
}

// mma_block's contract for FP4 weights and ExpertPrecision::Fp16, the token rows given as fp16
// in k order: xrow16(t) is token t's row of `cols` values (16-byte aligned). Launched with
// stream_shared_bytes(BN, cols) of dynamic shared memory; cols passes stream_cols_ok.
template <bool Pair, int BN, class XRow16, class Store>
__device__ inline void mma_stream_block(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows,
                                        int64_t cols, XRow16 xrow16, int n_tokens, Store store,
                                        unsigned long long* scale_fault, unsigned long long fault_key) {
  static_assert(BN == kMmaTokens || BN == kMmaFewTokens, "a token tile of 64 or 32");
  extern __shared__ uint4 stream_shared_words[];  // 16-byte aligned
  uint8_t* const stream_shared = reinterpret_cast<uint8_t*>(stream_shared_words);
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int64_t steps = cols / kMmaK, scale_bytes = cols / 32, scale_pitch = stream_scale_pitch(cols);
  const int64_t row_bytes = cols / 2;
  uint8_t* const scales = stream_shared;
  uint8_t* const ring = stream_shared + kMmaRows * scale_pitch;
  constexpr int64_t kStage = stream_stage_bytes(BN);
  constexpr int kWeightBytes = kMmaRows * kStreamRowBytes;

  // The scale bytes of all 256 rows, in 16-byte pieces where rows allow, else 4-byte ones.
  {
    const bool wide = scale_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(m0.scale) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(m1.scale) % 16 == 0;
    const int piece = wide ? 16 : 4;
    const int per_row = int(scale_bytes) / piece;
    for (int idx = tid; idx < kMmaRows * per_row; idx += kMmaThreads) {
      const int L = idx / per_row, c = idx % per_row;
      const DeviceMat* m;
      const int64_t stored = stream_stored_row<Pair>(m0, m1, row0, n_rows, L, m);
      const uint8_t* src = m->scale + scale_row_offset<WeightCode::FP4>(stored, cols) + c * piece;
      uint8_t* dst = scales + L * scale_pitch + c * piece;
      if (wide) mma::copy_async16(dst, src);
      else mma::copy_async4(dst, src);
    }
  }
  // This thread's two 16-byte pieces of weight rows per step (local rows tid / 2 and 128 + tid / 2)
  // and its pieces of the token tile (one 8-column group of a token; zeros past n_tokens).
  const uint8_t* wsrc[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const DeviceMat* m;
    const int64_t stored = stream_stored_row<Pair>(m0, m1, row0, n_rows, tid / 2 + 128 * j, m);
    wsrc[j] = m->data + stored * row_bytes + (tid % 2) * 16;
  }
  constexpr int kTokenPieces = BN * (kMmaK / 8) / kMmaThreads;  // 1 or 2
  const uint16_t* tsrc[kTokenPieces];
  int tdst[kTokenPieces];
  bool tlive[kTokenPieces];
#pragma unroll
  for (int j = 0; j < kTokenPieces; ++j) {
    const int idx = tid + j * kMmaThreads, t = idx / (kMmaK / 8), grp = idx % (kMmaK / 8);
    tlive[j] = t < n_tokens;
    tsrc[j] = xrow16(tlive[j] ? t : 0) + 8 * grp;
    tdst[j] = t * kMmaPitch + 8 * grp;
  }
  auto issue = [&](int64_t step) {
    uint8_t* stage = ring + (step % kStreamStages) * kStage;
#pragma unroll
    for (int j = 0; j < 2; ++j)
      mma::copy_async16_after_reads(stage + (tid / 2 + 128 * j) * kStreamRowBytes + (tid % 2) * 16,
                                    wsrc[j] + step * kStreamRowBytes);
    auto* tile = reinterpret_cast<uint16_t*>(stage + kWeightBytes);
#pragma unroll
    for (int j = 0; j < kTokenPieces; ++j) mma::copy_async16_or_zero(tile + tdst[j], tsrc[j] + step * kMmaK, tlive[j]);
  };
#pragma unroll
  for (int s = 0; s < kStreamStages - 1; ++s) {  // the scales travel in the first group
    if (s < steps) issue(s);
    mma::copy_async_commit();
  }

  const int64_t wrow0 = row0 + warp * (Pair ? kMmaWarpRows / 2 : kMmaWarpRows);
  mma_tile_variant<Pair, BN>(n_tokens, [&](auto ntu, auto guard) {
    constexpr int NTU = decltype(ntu)::value;
    float acc[2][BN / 8][4] = {};
    for (int64_t s = 0; s < steps; ++s) {
      mma::copy_async_wait_groups<kStreamStages - 2>();  // this thread's pieces of step s are in
      __syncthreads();  // and everyone's; step s - 1's stage, refilled next, is read by all
      if (s + kStreamStages - 1 < steps) issue(s + kStreamStages - 1);
      mma::copy_async_commit();
      const uint8_t* stage = ring + (s % kStreamStages) * kStage;
      uint32_t words[2][2][2];
      uint8_t sc[2][2];
#pragma unroll
      for (int f = 0; f < 2; ++f)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int L = warp * kMmaWarpRows + 16 * f + g + 8 * h;
          const uint2 v = *reinterpret_cast<const uint2*>(stage + L * kStreamRowBytes + q * 8);
          words[f][h][0] = v.x, words[f][h][1] = v.y;
          sc[f][h] = scales[L * scale_pitch + 2 * s + q / 2];  // the lane's 16 columns share one
        }
      with_fp4_half_scales<true>(sc, scale_fault, fault_key, [&](const Fp4HalfScale(&hs)[2][2], auto big) {
        stream_step<BN, NTU, decltype(guard)::value, decltype(big)::value>(
            reinterpret_cast<const uint16_t*>(stage + kWeightBytes), words, hs, n_tokens, g, q, acc);
      });
    }
    mma_store_tile<Pair, BN, NTU>(acc, wrow0, n_rows, n_tokens, g, q, store);
  });
}

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
