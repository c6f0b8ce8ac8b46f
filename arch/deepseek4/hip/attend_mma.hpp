// The prefill attend kernel on the matrix cores (NVIDIA sm_80+; .hip files only). Every head of a
// token reads the same keys (one shared KV head), so a token's attention is two small matrix
// products per tile of keys: logits = Q K^T over 16 heads x 16 keys, then O += P V over 16 heads x
// the head's width. attend_tiled.hpp did both on the CUDA cores at about 90 instructions per key
// and head on each warp.
//
// One block serves one token and 16 of its heads with four warps; warp w owns a quarter of the
// head's channels: its share of Q (as A fragments, in registers for the whole kernel; the kernel
// applies each head's RMSNorm and rope as it loads them when the batch's Q arrives as projected)
// and of the output sums (C fragments). A tile of 16 keys is copied into shared memory as bf16 parts, split
// once per batch beforehand (attend_key_parts.hpp); each warp multiplies its channels of Q by the
// tile's, the four partial logit tiles are summed in warp order through shared memory (every warp
// gets the same bits), each warp keeps the same running max and denominator per head, and
// multiplies the probabilities by its channels of the tile (ldmatrix .trans makes the tile's rows
// the B fragments of P V).
//
// Operands are split into two bf16 parts (hi + lo, about 2^-17 relative) with three products per
// pair (hi*hi + hi*lo + lo*hi), as the weight products do with x; Split = false keeps one part.
#pragma once
#include <cmath>
#include <cstdint>

#include "deepseek4/hip/attend_args.hpp"
#include "deepseek4/hip/attend_key_parts.hpp"
#include "deepseek4/hip/rope_pair.hpp"

#if defined(MOEPAGE_GPU_NVIDIA)
#include "deepseek4/hip/mma_nvidia.hpp"
#endif

namespace moepage::ds4::gpu {

constexpr int kMmaAttendWarps = 4;
constexpr int kMmaAttendThreads = kMmaAttendWarps * 32;
constexpr int kMmaAttendHeads = 16;  // the rows of one matrix-core product
constexpr int kMmaAttendKeys = 16;   // keys per tile: the k of the P V product
constexpr int kMmaAttendPad = 8;     // bf16 after each staged key row (16 bytes): ldmatrix rows in distinct banks
// Three blocks per multiprocessor (the 70 KiB of shared memory allow three): at most 170
// registers a thread, against the 226 the kernel takes unbounded (two blocks, 12.5% occupancy).
constexpr int kMmaAttendBlocksPerSm = 3;

// Head counts and widths the kernel takes: whole products of 16 heads, and a width that splits
// into four warps' shares of whole 16-channel steps with the registers to hold them.
inline bool attend_mma_applies(int64_t H, int64_t hd) {
  return H % kMmaAttendHeads == 0 && (hd == 64 || hd == 128 || hd == 256 || hd == 512);
}

// Two tiles of keys (each a hi and a lo part: the one multiplied, the next on its way), the warps'
// partial logit tiles, and two tiles' key rows: 69 KiB at a head of 512 (the launch raises the
// 48 KiB default).
inline size_t attend_mma_shared_bytes(int64_t hd) {
  return 4 * size_t(kMmaAttendKeys) * size_t(hd + kMmaAttendPad) * sizeof(uint16_t) +
         size_t(kMmaAttendWarps) * 32 * 8 * sizeof(float) + 2 * size_t(kMmaAttendKeys) * sizeof(int64_t);
}

#if defined(MOEPAGE_GPU_NVIDIA)

namespace attend_mma_detail {

// The key_parts rows of keys [t0, t0 + kMmaAttendKeys) of the token (-1 past the last), by the
// first threads: the ring's modulo and the CSA picks once per key, not once per staged chunk.
__device__ inline void find_key_rows(const AttendArgs& a, const TokenKeys& keys, int64_t t0, int64_t* rows) {
  if (threadIdx.x < kMmaAttendKeys) {
    const int64_t k = t0 + int64_t(threadIdx.x);
    rows[threadIdx.x] = k < keys.n_keys ? keys.key_part_row(a, k) : -1;
  }
}

// Starts copying the parts of the keys at `rows` into a tile ([kMmaAttendKeys, HD + pad] each of
// hi and lo; lo only when Split) without waiting for them; a missing row is written as zeros, so
// that a masked key's zero probability never meets a stale NaN. Thread t copies the 16-byte chunk
// t % (HD / 8) of keys t / (HD / 8), then every kMmaAttendThreads / (HD / 8) keys on: each index
// is a compile-time stride, so a copy costs its row's lookup and an address. (A loop over the
// tile's chunks that derived key, part and column from one counter spent about 40 instructions a
// chunk on it, half of the kernel's instructions: H100, 2026-12-06.)
template <int HD, bool Split>
__device__ inline void load_key_tile(const AttendArgs& a, const int64_t* rows, uint16_t* hi, uint16_t* lo) {
  constexpr int ld = HD + kMmaAttendPad, per_row = HD / 8;  // 16-byte chunks of 8 bf16
  static_assert(kMmaAttendThreads % per_row == 0, "whole key rows per pass of the block's threads");
  constexpr int key_step = kMmaAttendThreads / per_row;
  static_assert(kMmaAttendKeys % key_step == 0, "every thread copies the same number of chunks");
  const int c = (int(threadIdx.x) % per_row) * 8, j0 = int(threadIdx.x) / per_row;
#pragma unroll
  for (int i = 0; i < kMmaAttendKeys / key_step; ++i) {
    const int j = j0 + i * key_step;
    const int64_t row = rows[j];
    const bool live = row >= 0;
    const uint16_t* src = a.key_parts + (live ? row : 0) * 2 * HD + c;
    mma::copy_async16_or_zero(hi + j * ld + c, src, live);
    if constexpr (Split) mma::copy_async16_or_zero(lo + j * ld + c, src + HD, live);
  }
  mma::copy_async_commit();
}

// The max of a head's row over the four lanes that hold it (lanes 4r .. 4r+3).
__device__ inline float quad_max(float v) {
  v = fmaxf(v, MP_SHFL_XOR(v, 1));
  return fmaxf(v, MP_SHFL_XOR(v, 2));
}

// Output channels d, d + 1 of one head from its merged values, in place: the rope slice rotated
// back by the query's angle (unrotated_output, for an aligned pair).
__device__ inline void unrotate_pair(const AttendArgs& a, int64_t pos, int64_t d, float& x0, float& x1) {
  const int64_t rope0 = a.hd - 2 * a.half;
  if (d < rope0) return;
  const int64_t i = (d - rope0) / 2;
  const float c = a.cos[pos * a.half + i], sn = a.sin[pos * a.half + i];
  const float r0 = x0 * c + x1 * sn, r1 = x1 * c - x0 * sn;
  x0 = r0;
  x1 = r1;
}

__device__ inline void store_pair(const AttendArgs& a, float* out, int64_t pos, int64_t d, float x0, float x1) {
  unrotate_pair(a, pos, d, x0, x1);
  *reinterpret_cast<float2*>(out + d) = make_float2(x0, x1);
}

// The same two channels of head h of token s as the library's parts (AttendArgs::out_parts): the
// bf16 rounding of each, and of what it left, as matmul_library's split makes them from floats.
__device__ inline void store_pair_parts(const AttendArgs& a, int64_t s, int64_t h, int64_t pos, int64_t d, float x0,
                                        float x1) {
  unrotate_pair(a, pos, d, x0, x1);
  const int64_t g = h / a.parts_group_heads, cols = a.parts_group_heads * a.hd;
  const int64_t at = (g * a.parts_tokens + s) * cols + (h - g * a.parts_group_heads) * a.hd + d;
  const int64_t all = a.H * a.hd * a.parts_tokens;  // one part of every token
  const uint32_t hi = mma::pack_bf16x2(x0, x1);
  const float l0 = x0 - __uint_as_float(hi << 16), l1 = x1 - __uint_as_float(hi & 0xFFFF0000u);
  *reinterpret_cast<uint32_t*>(a.out_parts + at) = hi;
  *reinterpret_cast<uint32_t*>(a.out_parts + all + at) = mma::pack_bf16x2(l0, l1);
}

}  // namespace attend_mma_detail

// One warp's share of a block: its channels [d0, d0 + DW) of 16 heads' queries (A fragments) and
// output sums (C fragments), and the running max and denominator of heads r and r + 8 (the lane's
// fragment rows; the denominator is this lane's part of its quad's).
template <int DW, bool Split>
struct AttendWarp {
  static constexpr int KS = DW / 16;  // 16-channel steps of Q K^T in the warp's share
  static constexpr int NB = DW / 8;   // 8-channel blocks of the output in it
  static constexpr int64_t hd = 4 * DW, ld = hd + kMmaAttendPad;

  int warp, lane, r, c2, mi;  // c2: the lane's column pair; mi: the ldmatrix matrix it addresses
  int64_t d0;
  uint32_t q_hi[KS][4], q_lo[KS][4];
  float o[NB][4];
  float m0 = -INFINITY, m1 = -INFINITY, den0 = 0.0f, den1 = 0.0f;

  __device__ AttendWarp() {
    warp = int(threadIdx.x) / 32;
    lane = int(threadIdx.x) % 32;
    r = lane / 4;
    c2 = 2 * (lane % 4);
    mi = lane / 8;
    d0 = int64_t(warp) * DW;
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) o[nb][0] = o[nb][1] = o[nb][2] = o[nb][3] = 0.0f;
  }

  // The warp's channels of heads h0 .. h0 + 15 of token s, normed and roped here when q is raw
  // (norm_raw_queries); head_ss: 64 doubles of shared memory, free again on return.
  __device__ void load_queries(const AttendArgs& a, int64_t s, int64_t h0, double* head_ss) {
    const float* q_r = a.q + (s * a.H + h0 + r) * hd;
    const float* q_r8 = q_r + 8 * hd;
    float2 v[KS][4];  // rows r, r + 8 at columns k, k + 1, then r, r + 8 at k + 8, k + 9
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      const int64_t k = d0 + ks * 16 + c2;
      v[ks][0] = *reinterpret_cast<const float2*>(q_r + k);
      v[ks][1] = *reinterpret_cast<const float2*>(q_r8 + k);
      v[ks][2] = *reinterpret_cast<const float2*>(q_r + k + 8);
      v[ks][3] = *reinterpret_cast<const float2*>(q_r8 + k + 8);
    }
    if (a.q_raw) norm_raw_queries(a, s, head_ss, v);
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int i = 0; i < 4; ++i) split_bf16_pair(v[ks][i].x, v[ks][i].y, q_hi[ks][i], q_lo[ks][i]);
  }

  // What norm_rope does to each head's row of q (1 / RMS in double, no weight, then the rope of the
  // last 2 * half columns at the token's position), on the values this lane holds. A head's sum of
  // squares is its quad's (the lanes holding its row) over the four warps' channels, through
  // head_ss. Every thread of the block calls it.
  __device__ void norm_raw_queries(const AttendArgs& a, int64_t s, double* head_ss, float2 (&v)[KS][4]) const {
    double ss0 = 0, ss1 = 0;  // rows r and r + 8
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      ss0 += double(v[ks][0].x) * double(v[ks][0].x) + double(v[ks][0].y) * double(v[ks][0].y) +
             double(v[ks][2].x) * double(v[ks][2].x) + double(v[ks][2].y) * double(v[ks][2].y);
      ss1 += double(v[ks][1].x) * double(v[ks][1].x) + double(v[ks][1].y) * double(v[ks][1].y) +
             double(v[ks][3].x) * double(v[ks][3].x) + double(v[ks][3].y) * double(v[ks][3].y);
    }
    ss0 += MP_SHFL_XOR(ss0, 1);
    ss0 += MP_SHFL_XOR(ss0, 2);
    ss1 += MP_SHFL_XOR(ss1, 1);
    ss1 += MP_SHFL_XOR(ss1, 2);
    if (lane % 4 == 0) {
      head_ss[warp * kMmaAttendHeads + r] = ss0;
      head_ss[warp * kMmaAttendHeads + r + 8] = ss1;
    }
    __syncthreads();
    double t0 = 0, t1 = 0;
    for (int w = 0; w < kMmaAttendWarps; ++w) {
      t0 += head_ss[w * kMmaAttendHeads + r];
      t1 += head_ss[w * kMmaAttendHeads + r + 8];
    }
    __syncthreads();  // head_ss is the partial logits' memory once the tiles start
    const double inv0 = 1.0 / sqrt(t0 / double(hd) + double(a.q_eps));
    const double inv1 = 1.0 / sqrt(t1 / double(hd) + double(a.q_eps));
    const int64_t pos = a.p0 + s, rope0 = hd - 2 * a.half;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const double inv = i % 2 == 0 ? inv0 : inv1;
        const float y0 = float(double(v[ks][i].x) * inv), y1 = float(double(v[ks][i].y) * inv);
        const int64_t k = d0 + ks * 16 + c2 + (i >= 2 ? 8 : 0);
        if (k >= rope0) {
          const int64_t at = pos * a.half + (k - rope0) / 2;
          v[ks][i] = rope_pair(y0, y1, a.cos[at], a.sin[at]);
        } else {
          v[ks][i] = make_float2(y0, y1);
        }
      }
  }

  // The tile's scaled logits over all channels in lg (keys 0-7 in lg[0], 8-15 in lg[1]; -inf past
  // n_tile): this warp's share, then the four shares summed in warp order through `partials`
  // (every warp gets the same bits). Ends with the block synchronized.
  __device__ void tile_logits(const uint16_t* k_hi, const uint16_t* k_lo, float* partials, int64_t n_tile, float scale,
                              float (&lg)[2][4]) const {
    float part[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    const int64_t key_row = (mi >> 1) * 8 + lane % 8;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      const int64_t at = key_row * ld + d0 + ks * 16 + (mi & 1) * 8;
      uint32_t b_hi[4], b_lo[4];
      mma::load_x4(b_hi, k_hi + at);
      mma::mma_bf16(part[0], q_hi[ks], b_hi[0], b_hi[1]);
      mma::mma_bf16(part[1], q_hi[ks], b_hi[2], b_hi[3]);
      if constexpr (Split) {
        mma::load_x4(b_lo, k_lo + at);
        mma::mma_bf16(part[0], q_hi[ks], b_lo[0], b_lo[1]);
        mma::mma_bf16(part[1], q_hi[ks], b_lo[2], b_lo[3]);
        mma::mma_bf16(part[0], q_lo[ks], b_hi[0], b_hi[1]);
        mma::mma_bf16(part[1], q_lo[ks], b_hi[2], b_hi[3]);
      }
    }
    float4* mine = reinterpret_cast<float4*>(partials + (warp * 32 + lane) * 8);
    mine[0] = make_float4(part[0][0], part[0][1], part[0][2], part[0][3]);
    mine[1] = make_float4(part[1][0], part[1][1], part[1][2], part[1][3]);
    __syncthreads();
    for (int nb = 0; nb < 2; ++nb) lg[nb][0] = lg[nb][1] = lg[nb][2] = lg[nb][3] = 0.0f;
    for (int w = 0; w < kMmaAttendWarps; ++w) {
      const float4* theirs = reinterpret_cast<const float4*>(partials + (w * 32 + lane) * 8);
      const float4 x = theirs[0], y = theirs[1];
      lg[0][0] += x.x, lg[0][1] += x.y, lg[0][2] += x.z, lg[0][3] += x.w;
      lg[1][0] += y.x, lg[1][1] += y.y, lg[1][2] += y.z, lg[1][3] += y.w;
    }
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int i = 0; i < 4; ++i) lg[nb][i] = nb * 8 + c2 + (i & 1) < n_tile ? lg[nb][i] * scale : -INFINITY;
  }

  // Folds the tile's logits into the running max and denominator (rescaling the sums) and leaves
  // their probabilities in lg. Every tile has a key, so the new max is finite unless a logit is; a
  // NaN logit still reaches den and o.
  __device__ void softmax_step(float (&lg)[2][4]) {
    const float top0 =
        fmaxf(m0, attend_mma_detail::quad_max(fmaxf(fmaxf(lg[0][0], lg[0][1]), fmaxf(lg[1][0], lg[1][1]))));
    const float top1 =
        fmaxf(m1, attend_mma_detail::quad_max(fmaxf(fmaxf(lg[0][2], lg[0][3]), fmaxf(lg[1][2], lg[1][3]))));
    const float keep0 = expf(m0 - top0), keep1 = expf(m1 - top1);  // 0 on the first tile
    m0 = top0;
    m1 = top1;
#pragma unroll
    for (int nb = 0; nb < 2; ++nb) {
      lg[nb][0] = expf(lg[nb][0] - m0);
      lg[nb][1] = expf(lg[nb][1] - m0);
      lg[nb][2] = expf(lg[nb][2] - m1);
      lg[nb][3] = expf(lg[nb][3] - m1);
    }
    den0 = den0 * keep0 + ((lg[0][0] + lg[0][1]) + (lg[1][0] + lg[1][1]));
    den1 = den1 * keep1 + ((lg[0][2] + lg[0][3]) + (lg[1][2] + lg[1][3]));
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      o[nb][0] *= keep0;
      o[nb][1] *= keep0;
      o[nb][2] *= keep1;
      o[nb][3] *= keep1;
    }
  }

  // o += P V over the warp's channels. P's A fragment is the logits' two C fragments (keys 0-7 and
  // 8-15) side by side; ldmatrix .trans makes the key rows (V = K) the B fragments.
  __device__ void add_values(const uint16_t* k_hi, const uint16_t* k_lo, const float (&p)[2][4]) {
    uint32_t p_hi[4], p_lo[4];
    split_bf16_pair(p[0][0], p[0][1], p_hi[0], p_lo[0]);
    split_bf16_pair(p[0][2], p[0][3], p_hi[1], p_lo[1]);
    split_bf16_pair(p[1][0], p[1][1], p_hi[2], p_lo[2]);
    split_bf16_pair(p[1][2], p[1][3], p_hi[3], p_lo[3]);
    const int64_t v_row = (mi & 1) * 8 + lane % 8;
#pragma unroll
    for (int nb = 0; nb < NB; nb += 2) {
      const int64_t at = v_row * ld + d0 + nb * 8 + (mi >> 1) * 8;
      uint32_t v_hi[4], v_lo[4];
      mma::load_x4<true>(v_hi, k_hi + at);
      mma::mma_bf16(o[nb], p_hi, v_hi[0], v_hi[1]);
      mma::mma_bf16(o[nb + 1], p_hi, v_hi[2], v_hi[3]);
      if constexpr (Split) {
        mma::load_x4<true>(v_lo, k_lo + at);
        mma::mma_bf16(o[nb], p_hi, v_lo[0], v_lo[1]);
        mma::mma_bf16(o[nb + 1], p_hi, v_lo[2], v_lo[3]);
        mma::mma_bf16(o[nb], p_lo, v_hi[0], v_hi[1]);
        mma::mma_bf16(o[nb + 1], p_lo, v_hi[2], v_hi[3]);
      }
    }
  }

  // Each head's denominator over its quad, the sink (one more logit carrying no value), and the
  // warp's channels out, the rope slice rotated back.
  __device__ void store(const AttendArgs& a, int64_t s, int64_t h0) {
    den0 += MP_SHFL_XOR(den0, 1);
    den0 += MP_SHFL_XOR(den0, 2);
    den1 += MP_SHFL_XOR(den1, 1);
    den1 += MP_SHFL_XOR(den1, 2);
    const float sink0 = a.sink[h0 + r], sink1 = a.sink[h0 + r + 8];
    const float top0 = fmaxf(sink0, m0), top1 = fmaxf(sink1, m1);
    const float w0 = expf(m0 - top0), w1 = expf(m1 - top1);
    const float f0 = w0 / (expf(sink0 - top0) + den0 * w0), f1 = w1 / (expf(sink1 - top1) + den1 * w1);
    const int64_t pos = a.p0 + s;
    if (a.out_parts) {
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        const int64_t d = d0 + nb * 8 + c2;
        attend_mma_detail::store_pair_parts(a, s, h0 + r, pos, d, o[nb][0] * f0, o[nb][1] * f0);
        attend_mma_detail::store_pair_parts(a, s, h0 + r + 8, pos, d, o[nb][2] * f1, o[nb][3] * f1);
      }
      return;
    }
    float* out_r = a.out + (s * a.H + h0 + r) * hd;
    float* out_r8 = out_r + 8 * hd;
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      const int64_t d = d0 + nb * 8 + c2;
      attend_mma_detail::store_pair(a, out_r, pos, d, o[nb][0] * f0, o[nb][1] * f0);
      attend_mma_detail::store_pair(a, out_r8, pos, d, o[nb][2] * f1, o[nb][3] * f1);
    }
  }
};

// The body of a kernel launched with grid.x = S * (H / kMmaAttendHeads), kMmaAttendThreads
// threads and attend_mma_shared_bytes(hd) of dynamic shared memory; DW = hd / kMmaAttendWarps
// (the launch matched them).
template <int DW, bool Split>
__device__ inline void attend_mma(const AttendArgs& a) {
  using Warp = AttendWarp<DW, Split>;
  constexpr int64_t hd = Warp::hd, ld = Warp::ld;
  extern __shared__ float smem[];
  uint16_t* tiles = reinterpret_cast<uint16_t*>(smem);                                  // [2 tiles][hi, lo][16][ld]
  float* partials = reinterpret_cast<float*>(tiles + 4 * kMmaAttendKeys * ld);          // [warps][32 lanes][8]
  int64_t* key_rows = reinterpret_cast<int64_t*>(partials + kMmaAttendWarps * 32 * 8);  // [2][16]
  auto part = [&](int64_t tile, int p) { return tiles + ((tile & 1) * 2 + p) * kMmaAttendKeys * ld; };

  const int64_t groups = a.H / kMmaAttendHeads, s = blockIdx.x / groups;
  const int64_t h0 = (blockIdx.x % groups) * kMmaAttendHeads;
  const TokenKeys keys(a, s);
  Warp w;
  w.load_queries(a, s, h0, reinterpret_cast<double*>(partials));

  // The tiles alternate between two buffers: while the warps multiply tile t, tile t + 1 is on its
  // way (cp.async) and 16 threads find where tile t + 2 is.
  attend_mma_detail::find_key_rows(a, keys, 0, key_rows);
  __syncthreads();
  attend_mma_detail::load_key_tile<hd, Split>(a, key_rows, part(0, 0), part(0, 1));
  attend_mma_detail::find_key_rows(a, keys, kMmaAttendKeys, key_rows + kMmaAttendKeys);
  for (int64_t t0 = 0, tile = 0; t0 < keys.n_keys; t0 += kMmaAttendKeys, ++tile) {
    const int64_t n_tile = keys.n_keys - t0 < kMmaAttendKeys ? keys.n_keys - t0 : kMmaAttendKeys;
    const bool more = t0 + kMmaAttendKeys < keys.n_keys;
    // Every warp is done with the previous tile's buffer and partials, and tile t + 1's rows are
    // found.
    __syncthreads();
    if (more)
      attend_mma_detail::load_key_tile<hd, Split>(a, key_rows + ((tile + 1) & 1) * kMmaAttendKeys, part(tile + 1, 0),
                                                  part(tile + 1, 1));
    attend_mma_detail::find_key_rows(a, keys, t0 + 2 * kMmaAttendKeys, key_rows + (tile & 1) * kMmaAttendKeys);
    // This thread's copies of tile t landed (those of t + 1 may still fly), then everyone's.
    if (more) mma::copy_async_wait_all_but_one();
    else mma::copy_async_wait_all();
    __syncthreads();
    float lg[2][4];
    w.tile_logits(part(tile, 0), part(tile, 1), partials, n_tile, a.scale, lg);
    w.softmax_step(lg);
    w.add_values(part(tile, 0), part(tile, 1), lg);
  }
  w.store(a, s, h0);
}

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
