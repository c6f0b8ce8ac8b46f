// The operands of the matrix-core weight products: the tile constants and scale helpers every
// tile shares, and the k-ordered operands of the routed experts' tiles (the register tile,
// mma_tile.hpp, and the single-token products, mma_gemv.hpp): weights decoded into bf16 pairs and
// x rounded into bf16 pairs, both in the same k order (below). The dense projections' staged tile
// (mma_tile_staged.hpp) keeps the natural order and says why. For .hip files only.
//
// The weights are exact in bf16 (FP8 and FP4 codes have fewer mantissa bits, the scales are
// powers of two), so the one rounding is x's. Split mode (the default) writes x as two bf16 tiles,
// x's rounding and what it left (x - hi, rounded), and multiplies both: x is then carried to about
// 2^-17 relative, as close to the float product as the CUDA cores' own sum order, so a router's
// near tie goes the same way (plain bf16, about 2^-9, flipped experts on the golden fixtures).
// The routed experts' FP4 tiles may take fp16 operands instead (ExpertPrecision::Fp16): the
// weights are exact there too for scales up to 2^13, and x in one fp16 part is 2^-12 relative.
//
// The k order: a matrix product may sum its k index in any order as long as both operands agree.
// Each bf16 pair holds columns c and c + 4 of an 8-column group (pair p of a group: its columns p
// and p + 4), because that is what the FP4 decode below yields without moving a code across a
// nibble; the token tile is stored in the same order.
//
// Only NVIDIA sm_80+ has the instructions used (mma_nvidia.hpp); elsewhere kMmaAvailable is false
// and the launchers keep the CUDA-core tiles.
#pragma once
#include <cstdint>
#include <type_traits>

#include "deepseek4/hip/gemm_policy.hpp"
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

constexpr int kMmaTokens = 64;  // tokens per block tile (the routed experts' may be 32: kMmaFewTokens)
constexpr int kMmaFewTokens = 32;
constexpr int kMmaK = 64;             // columns per step
constexpr int kMmaThreads = 256;      // 8 warps per block, in both tiles
constexpr int kMmaPitch = kMmaK + 8;  // bf16 per shared row: 16 bytes of padding keep the loads conflict-free

// The token tiles an expert precision writes: x's rounding, and (split) what it left.
__host__ __device__ constexpr int x_parts(ExpertPrecision x) { return x == ExpertPrecision::SplitBf16 ? 2 : 1; }

// Whether a weight of `cols` columns in this encoding can take the matrix-core path.
__host__ __device__ constexpr bool mma_encoding(WeightCode w) {
  return w == WeightCode::FP8 || w == WeightCode::FP4 || w == WeightCode::BF16;
}
inline bool mma_shape_ok(int64_t cols) { return cols > 0 && cols % kMmaK == 0; }

#if defined(MOEPAGE_GPU_NVIDIA)

// An e8m0 block scale as a bf16 pair: 2^(e - 127) is bf16 bits e << 7 (e = 0: the subnormal
// 2^-127; 0xFF: NaN), as decode_e8m0 gives it in float.
__device__ inline uint32_t e8m0_bf16x2(uint8_t e) {
  const uint32_t b = e == 0xFF ? 0x7FC0u : e == 0 ? 0x0040u : uint32_t(e) << 7;
  return b | (b << 16);
}

// The FP4 decode's scale: one multiply by the scale times 2^126 = 2^(e - 1) (bits (e + 126) << 7),
// a bf16 number for e <= 128. Larger scales (and NaN) are not: `big` says so, and the decode then
// multiplies by 2^126 and by the scale in turn.
struct Fp4Scale {
  uint32_t factor, scale2;
  bool big;
  __device__ explicit Fp4Scale(uint8_t e) : big(e > 128) {
    const uint32_t b = big ? 0x7E80u : (uint32_t(e) + 126u) << 7;
    factor = b | (b << 16);
    scale2 = e8m0_bf16x2(e);
  }
};

// Eight e2m1 codes (one word, low nibble first: columns 0 .. 7) as four bf16 pairs in k order,
// times their block scale. Codes p and p + 4 sit at bits 4p and 16 + 4p: masked and multiplied by
// one integer (two shifts whose bits do not overlap), each lands with its magnitude at bits 6-8 of
// its half and its sign at bit 15, and a mask drops what the other shift carried. The half is
// then the code's value times 2^-126 as a bf16 number (subnormal for 0 and 0.5, as the exponent
// field 0 reads), and an exact multiply by the scale times 2^126 restores it. Three integer
// operations and a quarter of a shift per pair, then the multiply: about half the instructions
// of a decode through byte-permute tables. Big: the scale needs the two-multiply path.
__device__ inline uint32_t fp4_pair_raw(uint32_t masked, uint32_t multiplier) {
  return (masked * multiplier) & 0x81C081C0u;
}
template <bool Big>
__device__ inline void fp4_group_to_bf16(uint32_t word, const Fp4Scale& s, uint32_t (&out)[4]) {
  const uint32_t high = word >> 8;  // codes 2, 3, 6, 7 at the places of 0, 1, 4, 5
  const uint32_t raw[4] = {fp4_pair_raw(word & 0x000F000Fu, 0x1040u), fp4_pair_raw(word & 0x00F000F0u, 0x104u),
                           fp4_pair_raw(high & 0x000F000Fu, 0x1040u), fp4_pair_raw(high & 0x00F000F0u, 0x104u)};
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    out[p] = mma::mul_bf16x2(raw[p], s.factor);
    if constexpr (Big) out[p] = mma::mul_bf16x2(out[p], s.scale2);  // factor was 2^126 alone
  }
}

// The same codes as fp16 pairs (ExpertPrecision::Fp16). Placed for fp16, a code's magnitude
// lies in bits 9-11 and its sign in bit 15, four bits above it where e2m1 has one, so no one
// shift moves a nibble there; the codes are first spread one to a byte instead: the even
// and the odd codes of the word each fill a word's four bytes, magnitude in bits 1-3 and sign in
// bit 7 (the even codes: a mask, two shifts and a merge; the odd ones, whose sign is in place
// already, a shift, a mask and a merge). Such a byte is the high byte of the code's
// value times 2^-14 as an fp16 number (subnormal for 0 and 0.5), the low byte zero: one byte
// permute places the two bytes of a pair. One multiply by the scale times 2^14 restores the
// value, exactly wherever it is an fp16 number: scales 2^-23 .. 2^13 (Fp4HalfScale).
__device__ inline uint32_t fp4_codes_to_high_bytes(uint32_t codes) {  // a code in each byte's low nibble
  return ((codes << 1) | (codes << 4)) & 0x8E8E8E8Eu;
}
// An e8m0 scale for fp4_group_to_f16: factor = 2^(e - 113) as fp16 bits where it is one (e in
// 89 .. 128; below 89 the weights are under 2^-36 and read as zero); e in 129 .. 140 (`big`)
// multiplies by 2^15 and then by scale2 = 2^(e - 128); past 140 (and NaN) the weights do not fit
// fp16: `bad`, and the decode makes them NaN.
struct Fp4HalfScale {
  uint32_t factor, scale2;
  bool big, bad;
  // e in 99 .. 128 (a normal fp16 factor; every scale of a trained checkpoint's experts): the
  // one subtraction and multiply that the general constructor's selects reduce to.
  static constexpr uint8_t kNormalLow = 99, kNormalHigh = 128;
  struct Normal {};
  __device__ Fp4HalfScale(uint8_t e, Normal)
      : factor((uint32_t(e) - 98u) * 0x04000400u), scale2(0x3C003C00u), big(false), bad(false) {}
  __device__ explicit Fp4HalfScale(uint8_t e) : big(e > 128), bad(e > 140) {
    uint32_t f = e < 89 ? 0u : e < 99 ? 1u << (e - 89) : (uint32_t(e) - 98u) << 10;
    uint32_t f2 = 0x3C00u;
    if (big) f = 0x7800u, f2 = bad ? 0x7E00u : (uint32_t(e) - 113u) << 10;
    factor = f | (f << 16);
    scale2 = f2 | (f2 << 16);
  }
  __device__ Fp4HalfScale() = default;
};

// Runs decode(s, Big) with the fp16 scales of N scale bytes and whether one of them needs the
// two-multiply path; the first scale past fp16's range is recorded in *scale_fault (fault_key |
// the scale byte). Scales all in the normal range (the rule) take the short constructor, and only
// the rest the general one. WarpUniform: Big is the same for the whole warp (every lane active),
// as decode must have it where it issues matrix instructions (mma.sync in code the lanes do not
// all take is undefined); a lane whose scales need no second multiply gets the same bits from it
// (scale2 is 1).
template <bool WarpUniform = false, int N, class Decode>
__device__ inline void with_fp4_half_scale_list(const uint8_t (&sc)[N], unsigned long long* scale_fault,
                                                unsigned long long fault_key, Decode decode) {
  using S = Fp4HalfScale;
  S s[N];
  uint32_t spread = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    s[i] = S(sc[i], S::Normal{});
    spread = max(spread, uint32_t(sc[i] - S::kNormalLow));
  }
  bool big = false;
  if (spread > uint32_t(S::kNormalHigh - S::kNormalLow)) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      s[i] = S(sc[i]);
      big = big || s[i].big;
      if (s[i].bad && scale_fault) atomicCAS(scale_fault, 0ull, fault_key | sc[i]);
    }
  }
  if constexpr (WarpUniform) big = __any_sync(0xFFFFFFFFu, big);
  if (big) decode(s, std::true_type{});
  else decode(s, std::false_type{});
}
template <bool Big>
__device__ inline void fp4_group_to_f16(uint32_t word, const Fp4HalfScale& s, uint32_t (&out)[4]) {
  const uint32_t even = fp4_codes_to_high_bytes(word & 0x0F0F0F0Fu);        // codes 0, 2, 4, 6
  const uint32_t odd = ((word >> 3) & 0x0E0E0E0Eu) | (word & 0x80808080u);  // codes 1, 3, 5, 7
  // Pair p holds codes p and p + 4: bytes 0 and 2 (p = 0, 1) or 1 and 3 (p = 2, 3) of its word.
  const uint32_t raw[4] = {__byte_perm(even, 0u, 0x2404u), __byte_perm(odd, 0u, 0x2404u),
                           __byte_perm(even, 0u, 0x3414u), __byte_perm(odd, 0u, 0x3414u)};
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    out[p] = mma::mul_f16x2(raw[p], s.factor);
    if constexpr (Big) out[p] = mma::mul_f16x2(out[p], s.scale2);
  }
}

// Eight e4m3 codes (two words, low byte first) as four bf16 pairs in k order: the raw decode (the
// value times 2^-shift, row_dot.hpp) and two exact multiplies (half the shift, then the block scale
// `factor` with the other half, so no factor overflows a float); the product has at most 4
// significant bits, so its top 16 bits are its bf16 bits exactly (NaN stays NaN).
__device__ inline void fp8_group_to_bf16(uint32_t w0, uint32_t w1, float factor, uint32_t (&out)[4]) {
  constexpr float lift = pow2(kFp8RawShift / 2);
  float a[4], b[4];
  fp8_raw4_from_word(w0, a);
  fp8_raw4_from_word(w1, b);
#pragma unroll
  for (int p = 0; p < 4; ++p)
    out[p] = __byte_perm(__float_as_uint(a[p] * lift * factor), __float_as_uint(b[p] * lift * factor), 0x7632);
}
// The factor for fp8_group_to_bf16 from a group's block scale byte; a NaN code in the group (where
// the raw decode reads it as a number) makes it NaN.
__device__ inline float fp8_group_factor(uint8_t scale, uint32_t w0, uint32_t w1) {
  const bool nan = !kFp8RawKeepsNan && (fp8_has_nan(w0) | fp8_has_nan(w1));
  return (nan ? bits_as_float(0x7FC00000u) : decode_e8m0(scale)) * pow2(kFp8RawShift - kFp8RawShift / 2);
}

// Eight bf16 values (four words of natural pairs) regrouped into k order.
__device__ inline void bf16_group_to_pairs(const uint32_t (&w)[4], uint32_t (&out)[4]) {
#pragma unroll
  for (int p = 0; p < 4; ++p)  // columns p and p + 4: words p / 2 and p / 2 + 2, the same half
    out[p] = __byte_perm(w[p / 2], w[p / 2 + 2], (p & 1) ? 0x7632 : 0x5410);
}

// This thread's share of the token tile: 8-column groups (two float4s) of up to BN token rows
// (absent rows are zero), rounded to bf16 pairs in k order into b[0] (and, split, what the
// rounding left into b[1]) at `pitch` bf16 per token row.
template <int BN>
struct MmaTokenLoader {
  static constexpr int kGroups = kMmaK / 8;
  static constexpr int kPerThread = BN * kGroups / kMmaThreads;  // 2 or 1
  const float* row[kPerThread];
  int smem_at[kPerThread];
  float4 v[kPerThread][2];

  template <class XRow>
  __device__ void setup(XRow xrow, int n_tokens) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int idx = int(threadIdx.x) + j * kMmaThreads;
      const int t = idx / kGroups, grp = idx % kGroups;
      row[j] = t < n_tokens ? xrow(t) + 8 * grp : nullptr;
      smem_at[j] = t * kMmaPitch + 8 * grp;
    }
  }
  __device__ void load(int64_t step) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        v[j][i] = row[j] ? reinterpret_cast<const float4*>(row[j] + step * kMmaK)[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  // Fp16: one fp16 part; SplitBf16: bf16 hi into b[0], what it left into b[1]; Bf16: hi alone.
  template <ExpertPrecision X>
  __device__ void store(uint16_t (&b)[x_parts(X)][BN * kMmaPitch]) const {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const float x[8] = {v[j][0].x, v[j][0].y, v[j][0].z, v[j][0].w, v[j][1].x, v[j][1].y, v[j][1].z, v[j][1].w};
      // The paired conversion instruction: a fifth of the integer rounding's instructions, and
      // every block of a product converts its token tile again.
      uint32_t hi[4], lo[4];
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        hi[p] = X == ExpertPrecision::Fp16 ? mma::pack_f16x2(x[p], x[p + 4]) : mma::pack_bf16x2(x[p], x[p + 4]);
        if constexpr (X == ExpertPrecision::SplitBf16)
          lo[p] =
              mma::pack_bf16x2(x[p] - __uint_as_float(hi[p] << 16), x[p + 4] - __uint_as_float(hi[p] & 0xFFFF0000u));
      }
      *reinterpret_cast<uint4*>(b[0] + smem_at[j]) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
      if constexpr (X == ExpertPrecision::SplitBf16)
        *reinterpret_cast<uint4*>(b[1] + smem_at[j]) = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    }
  }
};

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
