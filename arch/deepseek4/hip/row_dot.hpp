// The inner loop of every weight product on the GPU: one warp computes the dot products of one
// stored weight row with a tile of up to T token vectors. The row is streamed once with 16-byte
// loads per lane (decoded in registers, scales applied per element so a 16-byte chunk may
// straddle a scale block), and each decoded weight is used for all T tokens: batch-1 decode is
// memory bound, so the weight bytes are the cost and x stays in L1. Rows whose first byte is not
// 16-byte aligned (odd column counts) take a scalar head up to the alignment, and columns past
// the last whole chunk a scalar tail. For .hip files only.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

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
__device__ constexpr int elem_bytes_den() { return W == WeightCode::FP4 ? 2 : 1; }

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
  return DeviceMat{reinterpret_cast<const uint8_t*>(w.data), reinterpret_cast<const uint8_t*>(w.scale), w.rows,
                   w.cols, w.row_offset};
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

}  // namespace moepage::ds4::gpu
