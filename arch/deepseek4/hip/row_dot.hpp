// The inner loop of every weight product on the GPU: one warp computes the dot products of one
// stored weight row with a tile of up to T token vectors. The row is streamed once with 16-byte
// loads per lane (decoded in registers, scales applied per element so a 16-byte chunk may
// straddle a scale block), and each decoded weight is used for all T tokens: batch-1 decode is
// memory bound, so the weight bytes are the cost and x stays in L1. Rows whose first byte is not
// 16-byte aligned (odd column counts) take a scalar head up to the alignment, and columns past
// the last whole chunk a scalar tail. For .hip files only.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "deepseek4/cpu/matref.hpp"
#include "deepseek4/hip/decode.hpp"
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

// Elements held in 16 stored bytes.
template <WeightCode W>
__device__ constexpr int elems_per_chunk() {
  if constexpr (W == WeightCode::F32) return 4;
  else if constexpr (W == WeightCode::BF16 || W == WeightCode::F16) return 8;
  else if constexpr (W == WeightCode::FP8) return 16;
  else return 32;
}

// Stored bytes per element, as a fraction num/den (FP4: 1/2).
template <WeightCode W>
__device__ constexpr int elem_bytes_num() {
  if constexpr (W == WeightCode::F32) return 4;
  else if constexpr (W == WeightCode::BF16 || W == WeightCode::F16) return 2;
  else return 1;
}
template <WeightCode W>
__device__ constexpr int elem_bytes_den() {
  return W == WeightCode::FP4 ? 2 : 1;
}

// The 16 bytes at p decoded into out[elems_per_chunk], the first element being column c0.
template <WeightCode W>
__device__ inline void decode_chunk(const uint4 q, const uint8_t* row_scale, int64_t c0, float* out) {
  const uint32_t words[4] = {q.x, q.y, q.z, q.w};
  if constexpr (W == WeightCode::F32) {
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = bits_as_float(words[i]);
  } else if constexpr (W == WeightCode::BF16 || W == WeightCode::F16) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint16_t lo = uint16_t(words[i] & 0xFFFFu), hi = uint16_t(words[i] >> 16);
      out[2 * i] = W == WeightCode::BF16 ? decode_bf16(lo) : decode_f16(lo);
      out[2 * i + 1] = W == WeightCode::BF16 ? decode_bf16(hi) : decode_f16(hi);
    }
  } else {
    constexpr int group = W == WeightCode::FP8 ? 128 : 32;
    constexpr int n = elems_per_chunk<W>();
    const float s_lo = decode_e8m0(row_scale[c0 / group]);
    const float s_hi = decode_e8m0(row_scale[(c0 + n - 1) / group]);
    const int64_t boundary = (c0 / group + 1) * group;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (W == WeightCode::FP8) {
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const int e = 4 * i + b;
          out[e] = decode_e4m3(uint8_t(words[i] >> (8 * b))) * (c0 + e < boundary ? s_lo : s_hi);
        }
      } else {
#pragma unroll
        for (int b = 0; b < 8; ++b) {  // low nibble first: even columns
          const int e = 8 * i + b;
          out[e] = decode_e2m1(uint8_t((words[i] >> (4 * b)) & 0xFu)) * (c0 + e < boundary ? s_lo : s_hi);
        }
      }
    }
  }
}

// acc[t] += the 16 stored bytes q (first column c0) times the matching columns of every xs[t].
template <WeightCode W, int T>
__device__ inline void chunk_fma(const uint4 q, const uint8_t* row_scale, int64_t c0, const float* const (&xs)[T],
                                 bool vec_x, float (&acc)[T]) {
  constexpr int epc = elems_per_chunk<W>();
  float w[epc];
  decode_chunk<W>(q, row_scale, c0, w);
  if (vec_x) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float4* xv = reinterpret_cast<const float4*>(xs[t] + c0);
      float a = acc[t];
#pragma unroll
      for (int e = 0; e < epc / 4; ++e) {
        const float4 v = xv[e];
        a += w[4 * e] * v.x;
        a += w[4 * e + 1] * v.y;
        a += w[4 * e + 2] * v.z;
        a += w[4 * e + 3] * v.w;
      }
      acc[t] = a;
    }
  } else {
#pragma unroll
    for (int t = 0; t < T; ++t) {
      float a = acc[t];
#pragma unroll
      for (int e = 0; e < epc; ++e) a += w[e] * xs[t][c0 + e];
      acc[t] = a;
    }
  }
}

// acc[t] = sum_c W[row, c] * xs[t][c] for the stored row `row` (already including the band's
// row offset), every lane of the warp holding the full sum on return. xs[t] for t >= the real
// tile size may repeat a valid row (their results are ignored). x_vec: every xs[t] is 16-byte
// aligned, so x is read four floats at a time.
template <WeightCode W, int T>
__device__ inline void warp_row_dot(const DeviceMat& m, int64_t row, const float* const (&xs)[T], bool x_vec,
                                    float (&acc)[T]) {
  const int lane = int(threadIdx.x % MP_WARP_SIZE);
  const int64_t cols = m.cols;
  const uint8_t* rd = m.data + row * row_bytes<W>(cols);
  const uint8_t* rs = m.scale ? m.scale + scale_row_offset<W>(row, cols) : nullptr;
#pragma unroll
  for (int t = 0; t < T; ++t) acc[t] = 0.0f;

  constexpr int epc = elems_per_chunk<W>();
  const uint32_t misalign = uint32_t(reinterpret_cast<uintptr_t>(rd) & 15u);
  const int64_t head_bytes = misalign ? 16 - misalign : 0;
  int64_t head = head_bytes * elem_bytes_den<W>() / elem_bytes_num<W>();
  if (head > cols) head = cols;
  const int64_t n_chunks = (cols - head) / epc;
  const int64_t body_end = head + n_chunks * epc;
  // x may be read as float4 only where the chunk's first column keeps 16-byte alignment.
  const bool vec_x = x_vec && (head % 4 == 0);

  for (int64_t c = lane; c < head; c += MP_WARP_SIZE) {
    const float w = decode_at<W>(rd, rs, c);
#pragma unroll
    for (int t = 0; t < T; ++t) acc[t] += w * xs[t][c];
  }
  const uint4* body = reinterpret_cast<const uint4*>(rd + head_bytes);
  // Two 16-byte loads in flight per lane before either is consumed: more bytes in flight per SM
  // is what a memory-bound stream needs.
  int64_t i = lane;
  for (; i + MP_WARP_SIZE < n_chunks; i += 2 * MP_WARP_SIZE) {
    const uint4 q0 = body[i];
    const uint4 q1 = body[i + MP_WARP_SIZE];
    chunk_fma<W, T>(q0, rs, head + i * epc, xs, vec_x, acc);
    chunk_fma<W, T>(q1, rs, head + (i + MP_WARP_SIZE) * epc, xs, vec_x, acc);
  }
  if (i < n_chunks) chunk_fma<W, T>(body[i], rs, head + i * epc, xs, vec_x, acc);
  for (int64_t c = body_end + lane; c < cols; c += MP_WARP_SIZE) {
    const float w = decode_at<W>(rd, rs, c);
#pragma unroll
    for (int t = 0; t < T; ++t) acc[t] += w * xs[t][c];
  }
#pragma unroll
  for (int t = 0; t < T; ++t)
    for (int off = MP_WARP_SIZE / 2; off > 0; off >>= 1) acc[t] += MP_SHFL_XOR(acc[t], off);
}

// ---- The aligned fast path ----------------------------------------------------------------
// When every row starts 16-byte aligned and is a whole number of 16-byte chunks (the normal case
// for every projection of the model), chunk i of a row holds columns [i*epc, (i+1)*epc): an FP8
// chunk lies inside one 128-column scale block and an FP4 chunk is exactly one 32-column scale
// group, so a chunk's partial dot product is scaled once. A thread streams R rows side by side:
// each 16 bytes of x read from cache serve R rows, and R*U 16-byte loads are in flight per lane.

template <class F, int... I>
__device__ inline void static_for_impl(F& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
// f(integral_constant<int, i>) for i < N, unrolled with i a compile-time constant.
template <int N, class F>
__device__ inline void static_for(F&& f) {
  static_for_impl(f, std::make_integer_sequence<int, N>{});
}

template <int I>
__device__ inline uint32_t word_of(const uint4& q) {
  if constexpr (I == 0) return q.x;
  else if constexpr (I == 1) return q.y;
  else if constexpr (I == 2) return q.z;
  else return q.w;
}

// 2^e as a float, for 0 <= e <= 127.
__device__ constexpr float pow2(int e) { return e == 0 ? 1.0f : 2.0f * pow2(e - 1); }

template <WeightCode W>
__device__ constexpr bool has_block_scale() {
  return W == WeightCode::FP8 || W == WeightCode::FP4;
}

// The scale of 16-byte chunk i of a block-scaled row whose scales start at row_scale (FP8: one per
// 128 columns, FP4: one per 32), 1 otherwise. Where the raw FP8 decode turns NaN codes into
// numbers, a NaN code anywhere in the chunk makes the scale NaN, so the product is NaN as NaN * x
// is on the CPU.
template <WeightCode W>
__device__ inline float chunk_scale(const uint4& q, const uint8_t* row_scale, int64_t i) {
  if constexpr (W == WeightCode::FP8) {
    if (!kFp8RawKeepsNan && (fp8_has_nan(q.x) | fp8_has_nan(q.y) | fp8_has_nan(q.z) | fp8_has_nan(q.w)))
      return bits_as_float(0x7FC00000u);
    return decode_e8m0(row_scale[i >> 3]);
  } else if constexpr (W == WeightCode::FP4) {
    return decode_e8m0(row_scale[i]);
  } else {
    return 1.0f;
  }
}

// Elements [4S, 4S+4) of chunk q, decoded without the block scale (FP8 / FP4: times 2^-raw_shift).
template <WeightCode W, int S>
__device__ inline void decode4(const uint4& q, float (&w)[4]) {
  if constexpr (W == WeightCode::F32) {
    w[0] = bits_as_float(q.x);
    w[1] = bits_as_float(q.y);
    w[2] = bits_as_float(q.z);
    w[3] = bits_as_float(q.w);
  } else if constexpr (W == WeightCode::BF16) {
    const uint32_t a = word_of<2 * S>(q), b = word_of<2 * S + 1>(q);
    w[0] = bits_as_float(a << 16);
    w[1] = bits_as_float(a & 0xFFFF0000u);
    w[2] = bits_as_float(b << 16);
    w[3] = bits_as_float(b & 0xFFFF0000u);
  } else if constexpr (W == WeightCode::F16) {
    const uint32_t a = word_of<2 * S>(q), b = word_of<2 * S + 1>(q);
    w[0] = decode_f16(uint16_t(a & 0xFFFFu));
    w[1] = decode_f16(uint16_t(a >> 16));
    w[2] = decode_f16(uint16_t(b & 0xFFFFu));
    w[3] = decode_f16(uint16_t(b >> 16));
  } else if constexpr (W == WeightCode::FP8) {
    fp8_raw4_from_word(word_of<S>(q), w);
  } else {
    const uint32_t a = word_of<S / 2>(q);
    constexpr int k = 4 * (S % 2);
    w[0] = fp4_raw_from_word<k>(a);
    w[1] = fp4_raw_from_word<k + 1>(a);
    w[2] = fp4_raw_from_word<k + 2>(a);
    w[3] = fp4_raw_from_word<k + 3>(a);
  }
}

// acc[r*T + t] += row r's chunk i (q[r]) . the chunk's columns of xs[t], scale applied once.
template <WeightCode W, int T, int R>
__device__ inline void tile_chunk(const uint4 (&q)[R], const uint8_t* const (&rs)[R], int64_t i,
                                  const float* const (&xs)[T], float (&acc)[R * T]) {
  constexpr int epc = elems_per_chunk<W>();
  const int64_t c0 = i * epc;
  // Raw FP8 / FP4 codes are 2^-shift too small; x is lifted by 2^(shift/2) as it is read and the
  // chunk's partial sum by the rest, so every product and sum is the exact one scaled by a power
  // of two (identical rounding) while x stays far from overflow (|x| < 2^64).
  constexpr int raw_shift = W == WeightCode::FP8 ? kFp8RawShift : kFp4RawShift;
  constexpr float x_lift = pow2(raw_shift / 2), part_lift = pow2(raw_shift - raw_shift / 2);
  float part[R * T];
#pragma unroll
  for (int j = 0; j < R * T; ++j) part[j] = 0.0f;
  static_for<epc / 4>([&](auto seg) {
    constexpr int S = decltype(seg)::value;
    float4 xv[T];
#pragma unroll
    for (int t = 0; t < T; ++t) {
      xv[t] = *reinterpret_cast<const float4*>(xs[t] + c0 + 4 * S);
      if constexpr (has_block_scale<W>()) {  // x carries half of the raw decode's missing power of two
        xv[t].x *= x_lift;
        xv[t].y *= x_lift;
        xv[t].z *= x_lift;
        xv[t].w *= x_lift;
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float w[4];
      decode4<W, S>(q[r], w);
#pragma unroll
      for (int t = 0; t < T; ++t) {
        float p = part[r * T + t];
        p = fmaf(w[0], xv[t].x, p);
        p = fmaf(w[1], xv[t].y, p);
        p = fmaf(w[2], xv[t].z, p);
        p = fmaf(w[3], xv[t].w, p);
        part[r * T + t] = p;
      }
    }
  });
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float s = chunk_scale<W>(q[r], rs[r], i);
#pragma unroll
    for (int t = 0; t < T; ++t) {
      if constexpr (has_block_scale<W>()) acc[r * T + t] = fmaf(part[r * T + t] * part_lift, s, acc[r * T + t]);
      else acc[r * T + t] += part[r * T + t];
    }
  }
}

// This thread's share of R rows (rd: their first chunks, rs: their scale rows) times T token
// vectors: chunks first, first + stride, ... of n_chunks, U chunks of every row loaded before
// any is used. acc[r*T + t] is zeroed first.
template <WeightCode W, int T, int R, int U>
__device__ inline void tile_dot(const uint4* const (&rd)[R], const uint8_t* const (&rs)[R], int64_t n_chunks,
                                const float* const (&xs)[T], int64_t first, int64_t stride, float (&acc)[R * T]) {
#pragma unroll
  for (int j = 0; j < R * T; ++j) acc[j] = 0.0f;
  int64_t i = first;
  for (; i + (U - 1) * stride < n_chunks; i += U * stride) {
    uint4 q[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) q[u][r] = rd[r][i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) tile_chunk<W, T, R>(q[u], rs, i + u * stride, xs, acc);
  }
  for (; i < n_chunks; i += stride) {
    uint4 q[R];
#pragma unroll
    for (int r = 0; r < R; ++r) q[r] = rd[r][i];
    tile_chunk<W, T, R>(q, rs, i, xs, acc);
  }
}

// Chunks a lane keeps in flight per row: enough bytes in flight for a memory-bound stream, fewer
// when many rows or tokens already fill the registers.
constexpr int tile_unroll(int T, int R) { return R * T >= 4 ? 2 : 8 / (R * T); }

// The most threads a block of the tiled kernels has (block-per-tile mode).
constexpr int kMaxTileThreads = 512;

// v[n] summed over the group, every thread of the group holding the same bits afterwards (fixed
// order: a butterfly is the same sum on every lane because a + b == b + a). The group is one
// warp, or the whole block when Block (then red is shared memory of N floats per warp).
template <int N, bool Block>
__device__ inline void group_sum(float (&v)[N], float* red) {
#pragma unroll
  for (int n = 0; n < N; ++n)
    for (int off = MP_WARP_SIZE / 2; off > 0; off >>= 1) v[n] += MP_SHFL_XOR(v[n], off);
  if constexpr (Block) {
    const int warp = int(threadIdx.x / MP_WARP_SIZE), warps = int(blockDim.x / MP_WARP_SIZE);
    if (threadIdx.x % MP_WARP_SIZE == 0)
#pragma unroll
      for (int n = 0; n < N; ++n) red[warp * N + n] = v[n];
    __syncthreads();
#pragma unroll
    for (int n = 0; n < N; ++n) {
      float s = 0.0f;
      for (int w = 0; w < warps; ++w) s += red[w * N + n];
      v[n] = s;
    }
    __syncthreads();
  }
}

// Where a thread stands in its group: a warp, or the whole block (Block), and which group it is.
template <bool Block>
struct TileGroup {
  int64_t id, count, first, stride;
  __device__ TileGroup() {
    if constexpr (Block) {
      id = blockIdx.x;
      count = gridDim.x;
      first = threadIdx.x;
      stride = blockDim.x;
    } else {
      const int64_t warps = blockDim.x / MP_WARP_SIZE;
      id = int64_t(blockIdx.x) * warps + threadIdx.x / MP_WARP_SIZE;
      count = int64_t(gridDim.x) * warps;
      first = threadIdx.x % MP_WARP_SIZE;
      stride = MP_WARP_SIZE;
    }
  }
};

// Host side: the kernels' view of a MatRef, after checking what the CPU kernel checks plus the
// alignment the device loads need (each element at a multiple of its size). `what` names the
// matrix in the error.
inline WeightCode weight_code(const cpu::MatRef& w, const char* what) {
  const std::string bad = cpu::check_matref(w);
  if (!bad.empty()) throw GpuError(std::string(what) + ": " + bad);
  const auto addr = reinterpret_cast<uintptr_t>(w.data);
  switch (w.dtype) {
    case Dtype::F32:
      if (addr % 4) throw GpuError(std::string(what) + ": F32 weight not 4-byte aligned in device memory");
      return WeightCode::F32;
    case Dtype::BF16:
    case Dtype::F16:
      if (addr % 2) throw GpuError(std::string(what) + ": 16-bit weight not 2-byte aligned in device memory");
      return w.dtype == Dtype::BF16 ? WeightCode::BF16 : WeightCode::F16;
    case Dtype::F8_E4M3: return WeightCode::FP8;
    default: return WeightCode::FP4;  // check_matref admits only I8 beyond these
  }
}

inline DeviceMat device_mat(const cpu::MatRef& w) {
  return DeviceMat{reinterpret_cast<const uint8_t*>(w.data), reinterpret_cast<const uint8_t*>(w.scale), w.rows, w.cols,
                   w.row_offset};
}

// Calls f(std::integral_constant<WeightCode, code>{}) so a launcher instantiates its kernel for
// the encoding known only at run time.
template <class F>
void with_weight_code(WeightCode code, F&& f) {
  switch (code) {
    case WeightCode::F32: f(std::integral_constant<WeightCode, WeightCode::F32>{}); return;
    case WeightCode::BF16: f(std::integral_constant<WeightCode, WeightCode::BF16>{}); return;
    case WeightCode::F16: f(std::integral_constant<WeightCode, WeightCode::F16>{}); return;
    case WeightCode::FP8: f(std::integral_constant<WeightCode, WeightCode::FP8>{}); return;
    case WeightCode::FP4: f(std::integral_constant<WeightCode, WeightCode::FP4>{}); return;
  }
}

// Token tile for n tokens: small batches waste no multiply-adds, larger ones share each weight
// load across 8 tokens.
template <class F>
void with_token_tile(int64_t n_tokens, F&& f) {
  if (n_tokens <= 1) f(std::integral_constant<int, 1>{});
  else if (n_tokens <= 2) f(std::integral_constant<int, 2>{});
  else if (n_tokens <= 4) f(std::integral_constant<int, 4>{});
  else f(std::integral_constant<int, 8>{});
}

// Host side of the aligned fast path.
// True when every row of w starts 16-byte aligned and is whole chunks, and x rows (ld_x floats
// apart) can be read as float4.
inline bool tiles_apply(const DeviceMat& m, WeightCode code, const float* x, int64_t ld_x, int64_t n_tokens) {
  const int64_t row_bytes = row_bytes_of(code, m.cols);
  return reinterpret_cast<uintptr_t>(m.data) % 16 == 0 && row_bytes % 16 == 0 && row_bytes > 0 &&
         reinterpret_cast<uintptr_t>(x) % 16 == 0 && (n_tokens == 1 || ld_x % 4 == 0);
}

// Streaming multiprocessors (compute units) of the current device, asked once.
int device_sm_count();

// How a tiled kernel is launched: R rows per tile (the launcher's template choice: wide or 1),
// one warp per tile when there are enough tiles to fill the device, else one block per tile
// with the columns split over its threads.
struct TilePlan {
  bool wide = false;   // R = the kernel's wide tile, else 1
  bool block = false;  // one block per tile
  unsigned grid = 1, threads = 256;
};

// rows: output rows of one matrix; n_chunks: 16-byte chunks per row; wide_rows: R of the wide
// tile; unroll: chunks per lane in flight; copies: matrices launched side by side (experts).
inline TilePlan plan_tiles(int64_t rows, int64_t n_chunks, int wide_rows, int unroll_wide, int unroll_narrow,
                           int64_t copies = 1) {
  const int64_t sm = device_sm_count();
  TilePlan p;
  p.wide = wide_rows > 1 && rows * copies >= 4 * sm * wide_rows / 2;
  const int64_t R = p.wide ? wide_rows : 1;
  const int64_t tiles = (rows + R - 1) / R;
  p.block = tiles * copies < 16 * sm;
  if (p.block) {
    // Chunks per thread: as few as keep about 1024 threads per SM busy (a small matrix is one
    // round trip to memory, spread as wide as the device), at most the unroll.
    const int64_t unroll = p.wide ? unroll_wide : unroll_narrow;
    const int64_t total_chunks = tiles * copies * n_chunks;
    const int64_t per_thread = std::clamp<int64_t>((total_chunks + sm * 1024 - 1) / (sm * 1024), 1, unroll);
    int64_t t = 64;
    while (t < kMaxTileThreads && t * per_thread < n_chunks) t *= 2;
    p.threads = unsigned(t);
    p.grid = unsigned(tiles);
  } else {
    p.threads = 256;
    p.grid = unsigned((tiles + 256 / MP_MIN_WARP_SIZE - 1) / (256 / MP_MIN_WARP_SIZE));
  }
  return p;
}

}  // namespace moepage::ds4::gpu
