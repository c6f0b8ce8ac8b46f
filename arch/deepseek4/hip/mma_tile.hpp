// Weight products over many tokens on the matrix cores for the routed experts (prefill): one
// block computes a tile of 256 stored weight rows by 64 (or 32) tokens, each of its 8 warps 32
// rows by every token. The weights never pass through shared memory: per step of 64 columns each
// lane loads 16 consecutive columns of four of its warp's rows (FP4 8 bytes, FP8 16, BF16 32)
// straight from global memory and decodes them with their block scales into bf16 (FP4 under
// ExpertPrecision::Fp16: fp16) registers that are the A operand as they stand: lane (g, q) holds, for k slice s, four
// of the columns 16q .. 16q + 15 where the instruction's layout says 2q, 2q+1, 2q+8, 2q+9, in the k order of
// mma_operands.hpp, and it reads the token tile (B), stored in the same order, with two 16-byte
// loads. x is rounded into that tile as the precision says (one fp16 part, two bf16 parts or
// one), double-buffered, so a step needs one barrier.
// FP4 experts on fp16 operands take the streamed variant of this tile by default
// (mma_tile_stream.hpp: the same warps and products, operands copied into shared memory several
// steps ahead); this one serves the other encodings and precisions, and matrix_expert_stream: false.
// (A tile that decoded the weights into shared memory and read them back with ldmatrix was
// bound by the L1 pipe at 93% on the experts, whose token tiles hold few tokens; the dense
// projections keep it, mma_tile_staged.hpp, since its warps share more of each operand.)
//
// The tokens are fetched through a row function (the tokens routed to one expert, gathered).
// Pair mode multiplies two matrices of the same shape (an expert's w1 and w3): each warp takes 16
// rows of both, so the SwiGLU of a row is formed in the registers that hold both of its sums.
// For .hip files only.
#pragma once
#include <cstdint>
#include <type_traits>

#include "deepseek4/hip/mma_operands.hpp"

namespace moepage::ds4::gpu {

constexpr int kMmaRows = 256;     // stored weight rows per block tile (pair mode: 128 of each)
constexpr int kMmaWarpRows = 32;  // a warp's stored rows: two 16-row fragments

#if defined(MOEPAGE_GPU_NVIDIA)

// The token tile, double-buffered: [buffer][x rounded, then (split) what the rounding left].
template <ExpertPrecision X, int BN>
struct MmaShared {
  uint16_t b[2][x_parts(X)][BN * kMmaPitch];
};

// group(f, h, grp, out) for each of a lane's 8-column groups (fragment f, row half h, group grp
// of its 16 columns), its four pairs stored into a in k order.
template <class Group>
__device__ inline void decode_lane_groups(uint32_t (&a)[2][2][8], Group group) {
#pragma unroll
  for (int f = 0; f < 2; ++f)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int grp = 0; grp < 2; ++grp) {
        uint32_t out[4];
        group(f, h, grp, out);
#pragma unroll
        for (int p = 0; p < 4; ++p) a[f][h][4 * grp + p] = out[p];
      }
}

// A lane's FP4 words of one step (words[fragment][half][8-column group]) decoded with their
// row halves' scales: into fp16 pairs under an Fp4HalfScale (ExpertPrecision::Fp16), else into
// bf16 pairs, in k order. Big: one of the scales needs the two-multiply path.
template <bool Big, class Scale>
__device__ inline void decode_fp4_words(const uint32_t (&words)[2][2][2], const Scale (&s)[2][2],
                                        uint32_t (&a)[2][2][8]) {
  decode_lane_groups(a, [&](int f, int h, int grp, uint32_t(&out)[4]) {
    if constexpr (std::is_same_v<Scale, Fp4HalfScale>) fp4_group_to_f16<Big>(words[f][h][grp], s[f][h], out);
    else fp4_group_to_bf16<Big>(words[f][h][grp], s[f][h], out);
  });
}

// with_fp4_half_scale_list (mma_operands.hpp) over the four scale bytes of a lane's step
// (sc[fragment][half]); decode gets them in the same shape.
template <bool WarpUniform = false, class Decode>
__device__ inline void with_fp4_half_scales(const uint8_t (&sc)[2][2], unsigned long long* scale_fault,
                                            unsigned long long fault_key, Decode decode) {
  const uint8_t flat[4] = {sc[0][0], sc[0][1], sc[1][0], sc[1][1]};
  with_fp4_half_scale_list<WarpUniform>(flat, scale_fault, fault_key, [&](const Fp4HalfScale(&s)[4], auto big) {
    decode(reinterpret_cast<const Fp4HalfScale(&)[2][2]>(s), big);
  });
}

// The fp16 decode (ExpertPrecision::Fp16) of a lane's FP4 words and scale bytes, the two-multiply
// path only where one of the four scales needs it. A scale past fp16's range is recorded in
// *scale_fault (fault_key | the scale byte) and its weights decode to NaN.
__device__ inline void decode_fp4_f16(const uint32_t (&words)[2][2][2], const uint8_t (&sc)[2][2],
                                      unsigned long long* scale_fault, unsigned long long fault_key,
                                      uint32_t (&a)[2][2][8]) {
  with_fp4_half_scales(sc, scale_fault, fault_key, [&](const Fp4HalfScale(&s)[2][2], auto big) {
    decode_fp4_words<decltype(big)::value>(words, s, a);
  });
}

// A lane's share of its warp's weights: for fragment f (16 rows) and half h (row g or g + 8 of
// it), the 16 columns 16q .. 16q + 15 of each step, loaded a step ahead with their scale byte and
// decoded into eight bf16 pairs in k order (pair 4i + p: columns 16q + 8i + p and + 4).
template <WeightCode W>
struct MmaWeightLoader {
  static constexpr int kLaneBytes = int(row_bytes_of(W, 16));  // FP4 8, FP8 16, BF16 32
  static constexpr int kWords = kLaneBytes / 4;
  const uint8_t* row[2][2];
  const uint8_t* scale[2][2];
  uint32_t raw[2][2][kWords];
  uint8_t sc[2][2];
  int q;
  unsigned long long* scale_fault = nullptr;  // ExpertPrecision::Fp16's record of a scale past 2^13
  unsigned long long fault_key = 0;

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

  // Each lane's 16 columns come out as eight bf16 (Fp16: fp16) pairs in k order (two 8-column
  // groups), FP4 through the two-multiply path only where one of the lane's four scales needs it.
  // An FP4 scale past fp16's range is recorded in *scale_fault (fault_key | the scale byte).
  template <ExpertPrecision X>
  __device__ void decode(uint32_t (&a)[2][2][8]) const {
    if constexpr (X == ExpertPrecision::Fp16) {
      static_assert(W == WeightCode::FP4, "fp16 operands are exact for FP4 weights only");
      decode_fp4_f16(raw, sc, scale_fault, fault_key, a);
    } else if constexpr (W == WeightCode::FP4) {
      const Fp4Scale s[2][2] = {{Fp4Scale(sc[0][0]), Fp4Scale(sc[0][1])}, {Fp4Scale(sc[1][0]), Fp4Scale(sc[1][1])}};
      if (s[0][0].big || s[0][1].big || s[1][0].big || s[1][1].big) decode_fp4_words<true>(raw, s, a);
      else decode_fp4_words<false>(raw, s, a);
    } else {
      decode_lane_groups(a, [&](int f, int h, int grp, uint32_t(&out)[4]) {
        const uint32_t* w = raw[f][h] + grp * (kWords / 2);
        if constexpr (W == WeightCode::BF16) {
          bf16_group_to_pairs({w[0], w[1], w[2], w[3]}, out);
        } else {
          const float factor = fp8_group_factor(sc[f][h], w[0], w[1]);
          fp8_group_to_bf16(w[0], w[1], factor, out);
        }
      });
    }
  }
};

// One step of 64 columns: this warp's decoded weights (a[fragment][half][pair]) times the first
// NTU n-tiles of the token tile buffer, into the accumulators. Guard: NTU is the tile's whole
// width and the n-tiles past the last token are skipped at run time; else NTU is a compile-time
// count and the step one straight run of matrix instructions the compiler may interleave. Each
// accumulator takes its products in the same order either way (the small part, then x's rounding,
// each over k slices 0 .. 3), so the sums are the same bits.
template <ExpertPrecision X, int BN, int NTU, bool Guard>
__device__ inline void mma_step(const uint16_t (&b)[x_parts(X)][BN * kMmaPitch], const uint32_t (&a)[2][2][8],
                                int n_tokens, int g, int q, float (&acc)[2][BN / 8][4]) {
  constexpr int parts = x_parts(X);
  auto products = [&](int nt, int p) {
    const uint4* src = reinterpret_cast<const uint4*>(b[p] + (nt * 8 + g) * kMmaPitch + q * 16);
    const uint4 lo = src[0], hi = src[1];
    const uint32_t bv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int s = 0; s < kMmaK / 16; ++s)
#pragma unroll
      for (int f = 0; f < 2; ++f) {
        const uint32_t frag[4] = {a[f][0][2 * s], a[f][1][2 * s], a[f][0][2 * s + 1], a[f][1][2 * s + 1]};
        if constexpr (X == ExpertPrecision::Fp16) mma::mma_f16(acc[f][nt], frag, bv[2 * s], bv[2 * s + 1]);
        else mma::mma_bf16(acc[f][nt], frag, bv[2 * s], bv[2 * s + 1]);
      }
  };
  if constexpr (Guard) {
#pragma unroll
    for (int nt = 0; nt < NTU; ++nt) {
      if (nt * 8 >= n_tokens) break;
#pragma unroll
      for (int p = parts - 1; p >= 0; --p) products(nt, p);  // the small part first
    }
  } else {
#pragma unroll
    for (int p = parts - 1; p >= 0; --p)
#pragma unroll
      for (int nt = 0; nt < NTU; ++nt) products(nt, p);
  }
}

// A warp's finished sums, each valid (row, token) handed to store once (the layout of
// mma_block's Store); rows at or past n_rows are not stored.
template <bool Pair, int BN, int NTU, class Store>
__device__ inline void mma_store_tile(const float (&acc)[2][BN / 8][4], int64_t wrow0, int64_t n_rows, int n_tokens,
                                      int g, int q, Store& store) {
#pragma unroll
  for (int nt = 0; nt < NTU; ++nt)
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

// The steps and the stores of mma_block for a token tile whose first NTU n-tiles hold tokens.
template <WeightCode W, bool Pair, ExpertPrecision X, int BN, int NTU, bool Guard, class Store>
__device__ inline void mma_block_steps(MmaShared<X, BN>& sh, MmaWeightLoader<W>& wl, MmaTokenLoader<BN>& tl,
                                       int64_t wrow0, int64_t n_rows, int64_t cols, int n_tokens, Store& store) {
  const int lane = int(threadIdx.x) % 32, g = lane / 4, q = lane % 4;
  float acc[2][BN / 8][4] = {};
  const int64_t steps = cols / kMmaK;
  for (int64_t s = 0; s < steps; ++s) {
    const bool more = s + 1 < steps;
    uint32_t a[2][2][8];
    wl.template decode<X>(a);
    if (more) {  // the next step's bytes travel while this one multiplies
      wl.load(s + 1);
      tl.load(s + 1);
    }
    mma_step<X, BN, NTU, Guard>(sh.b[s & 1], a, n_tokens, g, q, acc);
    if (more) tl.template store<X>(sh.b[(s + 1) & 1]);  // last read in step s - 1, before the barrier
    __syncthreads();
  }
  mma_store_tile<Pair, BN, NTU>(acc, wrow0, n_rows, n_tokens, g, q, store);
}

// The n-tile counts a token tile of BN compiles for: every count for 32 tokens, even counts for
// 64 (a tile of an odd count multiplies one n-tile of zeros rather than double the code).
template <int BN>
__host__ __device__ constexpr int mma_tile_ntu(int n_tokens) {
  const int used = (n_tokens + 7) / 8;
  return BN == kMmaFewTokens ? used : (used + 1) / 2 * 2;
}

// Runs steps(NTU, Guard) (two integral constants) with the step variant of a tile of n_tokens:
// pair mode straight steps over the n-tiles that hold tokens (4% faster on the H200 for w1/w3,
// 5% slower for w2), else guarded steps over the whole tile.
template <bool Pair, int BN, class Steps>
__device__ inline void mma_tile_variant(int n_tokens, Steps steps) {
  if constexpr (Pair) {
    const int ntu = mma_tile_ntu<BN>(n_tokens);
    static_for<BN / 8>([&](auto k) {
      constexpr int NTU = decltype(k)::value + 1;
      if constexpr (BN == kMmaFewTokens || NTU % 2 == 0)
        if (ntu == NTU) steps(std::integral_constant<int, NTU>{}, std::false_type{});
    });
  } else {
    steps(std::integral_constant<int, BN / 8>{}, std::true_type{});
  }
}

// The block's tile: rows [row0, row0 + 256) of m0 (pair mode: [row0, row0 + 128) of m0 and of m1)
// by the tokens xrow(0 .. n_tokens-1) (0 < n_tokens <= BN, 64 or 32), over `cols` columns (a
// multiple of 64).
// Every valid (row, token) reaches store(row, t, sum) (pair mode: store(row, t, sum0, sum1)),
// called by exactly one thread. Rows at or past n_rows are not stored.
template <WeightCode W, bool Pair, ExpertPrecision X, int BN, class XRow, class Store>
__device__ inline void mma_block(const DeviceMat& m0, const DeviceMat& m1, int64_t row0, int64_t n_rows, int64_t cols,
                                 XRow xrow, int n_tokens, Store store, unsigned long long* scale_fault = nullptr,
                                 unsigned long long fault_key = 0) {
  static_assert(BN == kMmaTokens || BN == kMmaFewTokens, "a token tile of 64 or 32");
  __shared__ MmaShared<X, BN> sh;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, g = lane / 4, q = lane % 4;
  const int64_t wrow0 = row0 + warp * (Pair ? kMmaWarpRows / 2 : kMmaWarpRows);
  MmaWeightLoader<W> wl;
  wl.template setup<Pair>(m0, m1, wrow0, n_rows, cols, g, q);
  wl.scale_fault = scale_fault;
  wl.fault_key = fault_key;
  MmaTokenLoader<BN> tl;
  tl.setup(xrow, n_tokens);

  wl.load(0);
  tl.load(0);
  tl.template store<X>(sh.b[0]);
  __syncthreads();
  mma_tile_variant<Pair, BN>(n_tokens, [&](auto ntu, auto guard) {
    mma_block_steps<W, Pair, X, BN, decltype(ntu)::value, decltype(guard)::value>(sh, wl, tl, wrow0, n_rows, cols,
                                                                                  n_tokens, store);
  });
}

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
