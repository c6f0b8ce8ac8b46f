// Weight products over many tokens on the matrix cores (prefill): one block computes a tile of
// 256 stored weight rows by 64 (or 32) tokens, each of its 8 warps 32 rows by every token. The
// weights never pass through shared memory: per step of 64 columns each lane loads 16 consecutive
// columns of four of its warp's rows (FP4 8 bytes, FP8 16, BF16 32) straight from global memory
// and decodes them with their block scales into bf16 registers that are the A operand as they
// stand. That works because a matrix product may sum its k index in any order as long as both
// operands agree: lane (g, q) holds, for k slice s, columns 16q + 4s .. 16q + 4s + 3 where the
// instruction's layout says 2q, 2q+1, 2q+8, 2q+9, and it reads the token tile (B) at the same
// columns from shared memory with two 16-byte loads. x is read as floats and rounded to bf16 into
// that tile, double-buffered, so a step needs one barrier. (The earlier tiles decoded the weights
// into shared memory and read them back with ldmatrix: the L1 pipe, saturated at 93%, bound them.)
//
// The weights are exact in bf16 (FP8 and FP4 codes have fewer mantissa bits, the scales are
// powers of two), so the one rounding is x's. Split mode (the default) writes x as two bf16 tiles,
// x's rounding and what it left (x - hi, rounded), and multiplies both: x is then carried to about
// 2^-17 relative, as close to the float product as the CUDA cores' own sum order, so a router's
// near tie goes the same way (plain bf16, about 2^-9, flipped experts on the golden fixtures).
//
// The tokens are fetched through a row function, so the same block serves the dense projections
// (token t's row of x) and the routed experts (the tokens routed to one expert, gathered). Pair
// mode multiplies two matrices of the same shape (an expert's w1 and w3): each warp takes 16 rows
// of both, so the SwiGLU of a row is formed in the registers that hold both of its sums.
//
// Only NVIDIA sm_80+ has the instructions used here (mma_nvidia.hpp); elsewhere kMmaAvailable is
// false and the launchers keep the CUDA-core tiles. For .hip files only.
#pragma once
#include <cstdint>

#include "deepseek4/hip/row_dot.hpp"

#if defined(MOEPAGE_GPU_NVIDIA)
#include "deepseek4/hip/mma_nvidia.hpp"
#endif

namespace moepage::ds4::gpu {

#if defined(MOEPAGE_GPU_NVIDIA)
constexpr bool kMmaAvailable = true;
#else
constexpr bool kMmaAvailable = false;
#endif

constexpr int kMmaRows = 256;   // stored weight rows per block tile (pair mode: 128 of each)
constexpr int kMmaTokens = 64;  // tokens per block tile (the routed experts' may be 32: kMmaFewTokens)
constexpr int kMmaFewTokens = 32;
constexpr int kMmaK = 64;             // columns per step
constexpr int kMmaThreads = 256;      // 8 warps, each 32 stored rows by every token of the tile
constexpr int kMmaPitch = kMmaK + 8;  // bf16 per token row: 16 bytes of padding keep the loads conflict-free
constexpr int kMmaWarpRows = 32;      // a warp's stored rows: two 16-row fragments

// Whether a weight of `cols` columns in this encoding can take the matrix-core path.
__host__ __device__ constexpr bool mma_encoding(WeightCode w) {
  return w == WeightCode::FP8 || w == WeightCode::FP4 || w == WeightCode::BF16;
}
inline bool mma_shape_ok(int64_t cols) { return cols > 0 && cols % kMmaK == 0; }

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

// An e8m0 block scale as a bf16 pair: 2^(e - 127) is bf16 bits e << 7 (e = 0: the subnormal
// 2^-127; 0xFF: NaN), as decode_e8m0 gives it in float.
__device__ inline uint32_t e8m0_bf16x2(uint8_t e) {
  const uint32_t b = e == 0xFF ? 0x7FC0u : e == 0 ? 0x0040u : uint32_t(e) << 7;
  return b | (b << 16);
}

// The token tile, double-buffered: [buffer][x rounded, then (split) what the rounding left].
template <bool Split, int BN>
struct MmaShared {
  uint16_t b[2][Split ? 2 : 1][BN * kMmaPitch];
};

// A lane's share of its warp's weights: for fragment f (16 rows) and half h (row g or g + 8 of
// it), the 16 columns 16q .. 16q + 15 of each step, loaded a step ahead with their scale byte and
// decoded into eight bf16 pairs (pair j: columns 16q + 2j, 16q + 2j + 1).
template <WeightCode W>
struct MmaWeightLoader {
  static constexpr int kLaneBytes = int(row_bytes_of(W, 16));  // FP4 8, FP8 16, BF16 32
  static constexpr int kWords = kLaneBytes / 4;
  const uint8_t* row[2][2];
  const uint8_t* scale[2][2];
  uint32_t raw[2][2][kWords];
  uint8_t sc[2][2];
  int q;

  // Pair: fragment 0 is rows wrow0 .. wrow0 + 15 of m0 and fragment 1 the same rows of m1; else
  // fragments 0 and 1 are rows wrow0 .. wrow0 + 31 of m0. Rows past n_rows repeat the last.
  template <bool Pair>
  __device__ void setup(const DeviceMat& m0, const DeviceMat& m1, int64_t wrow0, int64_t n_rows, int64_t cols, int g,
                        int lane_q) {
    q = lane_q;
#pragma unroll
    for (int f = 0; f < 2; ++f)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const DeviceMat& m = Pair && f == 1 ? m1 : m0;
        int64_t r = wrow0 + (Pair ? 0 : 16 * f) + g + 8 * h;
        if (r >= n_rows) r = n_rows - 1;
        const int64_t stored = m.row_offset + r;
        row[f][h] = m.data + stored * row_bytes<W>(cols) + q * kLaneBytes;
        scale[f][h] = has_block_scale<W>() ? m.scale + scale_row_offset<W>(stored, cols) : nullptr;
      }
  }

  __device__ void load(int64_t step) {
#pragma unroll
    for (int f = 0; f < 2; ++f)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint8_t* p = row[f][h] + step * (4 * kLaneBytes);
        if constexpr (kWords == 2) {
          const uint2 v = *reinterpret_cast<const uint2*>(p);
          raw[f][h][0] = v.x, raw[f][h][1] = v.y;
        } else {
#pragma unroll
          for (int c = 0; c < kWords / 4; ++c) {
            const uint4 v = reinterpret_cast<const uint4*>(p)[c];
            raw[f][h][4 * c] = v.x, raw[f][h][4 * c + 1] = v.y, raw[f][h][4 * c + 2] = v.z, raw[f][h][4 * c + 3] = v.w;
          }
        }
        // FP4: one scale per 32 columns (the lane's 16 lie in one); FP8: one per 128.
        if constexpr (W == WeightCode::FP4) sc[f][h] = scale[f][h][2 * step + q / 2];
        else if constexpr (W == WeightCode::FP8) sc[f][h] = scale[f][h][step / 2];
      }
  }

  // FP4 codes through fp4x4_to_bf16. FP8 codes take the raw decode (the value times 2^-shift,
  // row_dot.hpp) and two exact multiplies (half the shift, then the block scale with the other
  // half, so no factor overflows a float); the product has at most 4 significant bits, so its top
  // 16 bits are its bf16 bits exactly (NaN stays NaN). BF16 bytes are the pairs as they are.
  __device__ void decode(uint32_t (&a)[2][2][8]) const {
#pragma unroll
    for (int f = 0; f < 2; ++f)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t* w = raw[f][h];
        uint32_t* out = a[f][h];
        if constexpr (W == WeightCode::BF16) {
#pragma unroll
          for (int j = 0; j < 8; ++j) out[j] = w[j];
        } else if constexpr (W == WeightCode::FP4) {
          const uint32_t scale2 = e8m0_bf16x2(sc[f][h]);
#pragma unroll
          for (int wd = 0; wd < 2; ++wd) {
            fp4x4_to_bf16(w[wd], scale2, out[4 * wd], out[4 * wd + 1]);
            fp4x4_to_bf16(w[wd] >> 16, scale2, out[4 * wd + 2], out[4 * wd + 3]);
          }
        } else {
          constexpr int shift = kFp8RawShift;
          constexpr float lift = pow2(shift / 2);
          const uint4 qv = make_uint4(w[0], w[1], w[2], w[3]);
          const float s =
              !kFp8RawKeepsNan && (fp8_has_nan(w[0]) | fp8_has_nan(w[1]) | fp8_has_nan(w[2]) | fp8_has_nan(w[3]))
                  ? bits_as_float(0x7FC00000u)
                  : decode_e8m0(sc[f][h]);
          const float factor = s * pow2(shift - shift / 2);
          static_for<4>([&](auto seg) {
            constexpr int S = decltype(seg)::value;
            float v[4];
            decode4<W, S>(qv, v);
            out[2 * S] =
                __byte_perm(__float_as_uint(v[0] * lift * factor), __float_as_uint(v[1] * lift * factor), 0x7632);
            out[2 * S + 1] =
                __byte_perm(__float_as_uint(v[2] * lift * factor), __float_as_uint(v[3] * lift * factor), 0x7632);
          });
        }
      }
  }
};

// This thread's share of the token tile: float4s of up to BN token rows (absent rows are zero).
template <int BN>
struct MmaTokenLoader {
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

// One step of 64 columns: this warp's decoded weights (a[fragment][half][pair]) times every
// token of the tile buffer, into the 32 x BN accumulators. n-tiles past the tile's last token
// are skipped (a routed expert's group rarely fills the tile).
template <bool Split, int BN>
__device__ inline void mma_step(const uint16_t (&b)[Split ? 2 : 1][BN * kMmaPitch], const uint32_t (&a)[2][2][8],
                                int n_tokens, int g, int q, float (&acc)[2][BN / 8][4]) {
  constexpr int parts = Split ? 2 : 1;
#pragma unroll
  for (int nt = 0; nt < BN / 8; ++nt) {
    if (nt * 8 >= n_tokens) break;
#pragma unroll
    for (int p = parts - 1; p >= 0; --p) {  // the small part first
      const uint4* src = reinterpret_cast<const uint4*>(b[p] + (nt * 8 + g) * kMmaPitch + q * 16);
      const uint4 lo = src[0], hi = src[1];
      const uint32_t bv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (int f = 0; f < 2; ++f)
#pragma unroll
        for (int s = 0; s < kMmaK / 16; ++s) {
          const uint32_t frag[4] = {a[f][0][2 * s], a[f][1][2 * s], a[f][0][2 * s + 1], a[f][1][2 * s + 1]};
          mma::mma_bf16(acc[f][nt], frag, bv[2 * s], bv[2 * s + 1]);
        }
    }
  }
}

// The block's tile: rows [row0, row0 + 256) of m0 (pair mode: [row0, row0 + 128) of m0 and of m1)
// by the tokens xrow(0 .. n_tokens-1) (n_tokens <= BN, 64 or 32), over `cols` columns (a
// multiple of 64).
// Every valid (row, token) reaches store(row, t, sum) (pair mode: store(row, t, sum0, sum1)),
// called by exactly one thread. Rows at or past n_rows are not stored.
template <WeightCode W, bool Pair, bool Split, int BN, class XRow, class Store>
__device__ inline void mma_block(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows, int64_t cols,
                                 XRow xrow, int n_tokens, Store store) {
  static_assert(BN == kMmaTokens || BN == kMmaFewTokens, "a token tile of 64 or 32");
  constexpr int NT = BN / 8;
  __shared__ MmaShared<Split, BN> sh;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, g = lane / 4, q = lane % 4;
  const int64_t wrow0 = row0 + warp * (Pair ? kMmaWarpRows / 2 : kMmaWarpRows);
  MmaWeightLoader<W> wl;
  wl.template setup<Pair>(m0, m1, wrow0, n_rows, cols, g, q);
  MmaTokenLoader<BN> tl;
  tl.setup(xrow, n_tokens);
  float acc[2][NT][4];
#pragma unroll
  for (int f = 0; f < 2; ++f)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[f][nt][e] = 0.0f;

  const int64_t steps = cols / kMmaK;
  wl.load(0);
  tl.load(0);
  tl.template store<Split>(sh.b[0]);
  __syncthreads();
  for (int64_t s = 0; s < steps; ++s) {
    const bool more = s + 1 < steps;
    uint32_t a[2][2][8];
    wl.decode(a);
    if (more) {  // the next step's bytes travel while this one multiplies
      wl.load(s + 1);
      tl.load(s + 1);
    }
    mma_step<Split, BN>(sh.b[s & 1], a, n_tokens, g, q, acc);
    if (more) tl.template store<Split>(sh.b[(s + 1) & 1]);  // last read in step s - 1, before the barrier
    __syncthreads();
  }

#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int t = nt * 8 + 2 * q + (e & 1);
      if (t >= n_tokens) continue;
      if constexpr (Pair) {
        const int64_t r = wrow0 + g + (e >= 2 ? 8 : 0);
        if (r < n_rows) store(r, t, acc[0][nt][e], acc[1][nt][e]);
      } else {
#pragma unroll
        for (int f = 0; f < 2; ++f) {
          const int64_t r = wrow0 + f * 16 + g + (e >= 2 ? 8 : 0);
          if (r < n_rows) store(r, t, acc[f][nt][e]);
        }
      }
    }
}

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
