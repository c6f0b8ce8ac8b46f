// The single-token weight product with x held in registers (.hip files only).
//
// At batch 1 the tiled kernels of row_dot.hpp re-read x from L1 for every 16 weight bytes (four
// rows share each read), and on the H200 that L1 traffic, not DRAM, bounded the FP4 expert and
// FP8 projection products (ncu: L1 78% busy, DRAM 30%). Here the columns are split instead: a
// block is `slices` groups of 32 threads, thread (slice, lane) owns the 16-byte chunks
// slice*32 + lane + k*slices*32 (k < CPT) of every row, holds the x values of those chunks in
// registers for the whole kernel, and streams its chunk of each of the block's rows. The partial
// sums of the rows in flight are reduced over the 32 lanes together (slice_sums: xor offsets
// below 32, so wave64 works too) and parked in shared memory per slice; after the last row the
// slices' partials are added in slice order (the same bits every run). DRAM then carries the
// weights and nothing else touches L1 per weight byte but the weight load itself.
#pragma once
#include <algorithm>
#include <cstdint>

#include "deepseek4/hip/row_dot.hpp"

namespace moepage::ds4::gpu {

constexpr int kGemvLanes = 32;     // threads of a slice: the shuffle width, on every target
constexpr int kGemvMaxSlices = 8;  // 256 threads per block at most
constexpr int kGemvMaxRows = 64;   // rows (or row pairs) one block finishes

// Chunks per thread the x registers allow (32 floats of x per thread at most).
__host__ __device__ constexpr int gemv_max_cpt(WeightCode w) {
  return w == WeightCode::FP4 ? 1 : w == WeightCode::FP8 ? 2 : w == WeightCode::F32 ? 8 : 4;
}
__host__ __device__ constexpr int gemv_rows_in_flight(int cpt) { return cpt >= 2 ? 2 : 4; }

// How the columns of a row of n_chunks 16-byte chunks split: slices of 32 threads, chunks per
// thread. slices == 0: this path does not apply (the row is not a whole number of 32-chunk
// groups, or x would not fit in registers).
struct GemvShape {
  int slices = 0, cpt = 0;
};

inline GemvShape gemv_shape(WeightCode code, int64_t n_chunks) {
  GemvShape s;
  if (code == WeightCode::F16 || n_chunks <= 0 || n_chunks % kGemvLanes != 0) return s;
  const int64_t groups = n_chunks / kGemvLanes;
  const int64_t slices = std::min<int64_t>(groups, kGemvMaxSlices);
  const int64_t cpt = groups / slices;
  if (groups % slices != 0 || cpt > gemv_max_cpt(code) || (cpt & (cpt - 1)) != 0) return s;
  s.slices = int(slices);
  s.cpt = int(cpt);
  return s;
}

// Whether the single-token kernels take one token's product of m (stored in `code`) with x: rows of
// whole 32-chunk groups whose x fits in registers, weights and x 16-byte aligned.
inline bool single_token_applies(const DeviceMat& m, WeightCode code, const float* x) {
  return gemv_shape(code, row_bytes_of(code, m.cols) / 16).slices > 0 && tiles_apply(m, code, x, m.cols, 1);
}

// Rows per block for `rows` rows in each of `copies` matrices side by side: enough blocks to give
// every multiprocessor about 1024 threads' worth of loads in flight, at most kGemvMaxRows rows.
inline int gemv_rows_per_block(int64_t rows, int64_t copies, int slices) {
  const int64_t sm = device_sm_count();
  const int64_t blocks_wanted = sm * 1024 / (int64_t(slices) * kGemvLanes);
  const int64_t per_block = (rows * copies + blocks_wanted - 1) / blocks_wanted;
  return int(std::clamp<int64_t>(per_block, 1, kGemvMaxRows));
}

// This thread's x: the elements of its chunks, lifted by the raw decode's missing power of two
// (half of it; see tile_chunk) for the block-scaled encodings.
template <WeightCode W, int CPT>
__device__ inline void gemv_load_x(const float* x, int64_t first, int64_t stride,
                                   float (&xv)[CPT][elems_per_chunk<W>()]) {
  constexpr int epc = elems_per_chunk<W>();
  constexpr int raw_shift = W == WeightCode::FP8 ? kFp8RawShift : kFp4RawShift;
  constexpr float lift = has_block_scale<W>() ? pow2(raw_shift / 2) : 1.0f;
#pragma unroll
  for (int k = 0; k < CPT; ++k) {
    const float4* p = reinterpret_cast<const float4*>(x + (first + k * stride) * epc);
#pragma unroll
    for (int e = 0; e < epc / 4; ++e) {
      const float4 v = p[e];
      xv[k][4 * e] = v.x * lift;
      xv[k][4 * e + 1] = v.y * lift;
      xv[k][4 * e + 2] = v.z * lift;
      xv[k][4 * e + 3] = v.w * lift;
    }
  }
}

// An RMSNorm of x folded into a single-token product: W (x * gain * r) = r * (W (x * gain)), r =
// 1 / sqrt(mean(x^2) + eps). The block's threads hold every column of x between them, so the sum
// of squares costs a slice sum, and the product needs no normed copy of x (one launch and one
// round trip fewer per decode step; the sums differ from norm-then-product by float rounding).
struct GemvInputNorm {
  bool on = false;
  const float* gain = nullptr;  // null: unweighted
  float eps = 0.0f;
};

// Multiplies this thread's x by the gain and returns this thread's sum of squares of the raw x
// (double, like cpu::rms_norm; gemv_lanes_sum adds the slice's). xv as gemv_load_x left it
// (lifted by a power of two).
template <WeightCode W, int CPT>
__device__ inline double gemv_fold_norm(const float* gain, int64_t first, int64_t stride,
                                        float (&xv)[CPT][elems_per_chunk<W>()]) {
  constexpr int epc = elems_per_chunk<W>();
  constexpr int raw_shift = W == WeightCode::FP8 ? kFp8RawShift : kFp4RawShift;
  constexpr float unlift = has_block_scale<W>() ? 1.0f / pow2(raw_shift / 2) : 1.0f;
  double ss = 0;
#pragma unroll
  for (int k = 0; k < CPT; ++k) {
    const int64_t col0 = (first + k * stride) * epc;
#pragma unroll
    for (int e = 0; e < epc / 4; ++e) {
      const float4 g = gain ? reinterpret_cast<const float4*>(gain + col0)[e] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
      const float gs[4] = {g.x, g.y, g.z, g.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const double raw = double(xv[k][4 * e + i] * unlift);  // exact: unlift is a power of two
        ss += raw * raw;
        xv[k][4 * e + i] *= gs[i];
      }
    }
  }
  return ss;
}

// The sum of v over a slice's 32 lanes, on every lane.
__device__ inline double gemv_lanes_sum(double v) {
  for (int off = kGemvLanes / 2; off > 0; off >>= 1) v += MP_SHFL_XOR(v, off);
  return v;
}

// r of the folded norm from the slices' sums of squares, in slice order.
__device__ inline double gemv_norm_scale(const double* slice_ss, int64_t n, float eps) {
  const int slices = int(blockDim.x) / kGemvLanes;
  double total = 0;
  for (int sl = 0; sl < slices; ++sl) total += slice_ss[sl];
  return 1.0 / sqrt(total / double(n) + double(eps));
}

// This thread's share of one row: chunks q[k] (chunk index first + k*stride) against its x.
template <WeightCode W, int CPT>
__device__ inline float gemv_partial(const uint4 (&q)[CPT], const uint8_t* row_scale, int64_t first, int64_t stride,
                                     const float (&xv)[CPT][elems_per_chunk<W>()]) {
  constexpr int epc = elems_per_chunk<W>();
  constexpr int raw_shift = W == WeightCode::FP8 ? kFp8RawShift : kFp4RawShift;
  constexpr float part_lift = pow2(raw_shift - raw_shift / 2);
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < CPT; ++k) {
    float part = 0.0f;
    static_for<epc / 4>([&](auto seg) {
      constexpr int S = decltype(seg)::value;
      float w[4];
      decode4<W, S>(q[k], w);
      part = fmaf(w[0], xv[k][4 * S], part);
      part = fmaf(w[1], xv[k][4 * S + 1], part);
      part = fmaf(w[2], xv[k][4 * S + 2], part);
      part = fmaf(w[3], xv[k][4 * S + 3], part);
    });
    if constexpr (has_block_scale<W>()) {
      acc = fmaf(part * part_lift, chunk_scale<W>(q[k], row_scale, first + k * stride), acc);
    } else {
      acc += part;
    }
  }
  return acc;
}

// The 32-lane sums of U values at once (U a power of two up to 32): while a lane holds several,
// the lanes whose bit `off` is set keep the upper half and send the lower half to their partner,
// which does the opposite, so each exchange halves the values held; then plain butterflies. Lane
// l ends with the total of value l / (32 / U): U-1 fewer shuffles and adds per value than U
// separate sums (the adds are in another order, a float rounding apart).
template <int U>
__device__ inline float slice_sums(const float (&v)[U], int lane) {
  float held[U];
#pragma unroll
  for (int i = 0; i < U; ++i) held[i] = v[i];
  int off = kGemvLanes / 2;
#pragma unroll
  for (int n = U; n > 1; n >>= 1, off >>= 1) {
    const bool upper = (lane & off) != 0;
#pragma unroll
    for (int i = 0; i < n / 2; ++i) {
      const float send = upper ? held[i] : held[i + n / 2];
      const float keep = upper ? held[i + n / 2] : held[i];
      held[i] = keep + MP_SHFL_XOR(send, off);
    }
  }
  float total = held[0];
#pragma unroll
  for (; off > 0; off >>= 1) total += MP_SHFL_XOR(total, off);
  return total;
}

// Where a thread of a single-token block stands: its slice and lane, and its chunks of every row
// (first, first + stride, ...).
struct GemvLane {
  int slice, lane;
  int64_t first, stride;
  __device__ GemvLane() {
    slice = int(threadIdx.x) / kGemvLanes;
    lane = int(threadIdx.x) % kGemvLanes;
    const int slices = int(blockDim.x) / kGemvLanes;
    first = int64_t(slice) * kGemvLanes + lane;
    stride = int64_t(slices) * kGemvLanes;
  }
};

// Row r (of a matrix's band, clamped to the last of [.., r1)) as stored: its first chunk and its
// scale bytes.
template <WeightCode W>
__device__ inline const uint4* gemv_row(const DeviceMat& m, int64_t r, int64_t r1) {
  const int64_t row = m.row_offset + (r < r1 ? r : r1 - 1);
  return reinterpret_cast<const uint4*>(m.data + row * row_bytes<W>(m.cols));
}
template <WeightCode W>
__device__ inline const uint8_t* gemv_row_scale(const DeviceMat& m, int64_t r, int64_t r1) {
  const int64_t row = m.row_offset + (r < r1 ? r : r1 - 1);
  return has_block_scale<W>() ? m.scale + scale_row_offset<W>(row, m.cols) : nullptr;
}

// f(m, u, k, p) for this thread's chunk k of row r + u of matrix m, p its address: the chunks of
// one step of rows, in the order both paths hold them.
template <WeightCode W, int CPT, int NM, class F>
__device__ inline void gemv_step_chunks(const DeviceMat (&mats)[NM], int64_t r, int64_t r1, const GemvLane& at, F&& f) {
#pragma unroll
  for (int m = 0; m < NM; ++m)
#pragma unroll
    for (int u = 0; u < gemv_rows_in_flight(CPT); ++u) {
      const uint4* rd = gemv_row<W>(mats[m], r + u, r1);
#pragma unroll
      for (int k = 0; k < CPT; ++k) f(m, u, k, rd + at.first + k * at.stride);
    }
}

// Rows [r, r + U) of the NM matrices, their chunks q already in this thread's registers: the
// partial sums of every row, reduced over the slice's 32 lanes into partial[m][slice][row - r0].
template <WeightCode W, int CPT, int NM>
__device__ inline void gemv_rows_reduce(const DeviceMat (&mats)[NM],
                                        const uint4 (&q)[NM][gemv_rows_in_flight(CPT)][CPT], int64_t r, int64_t r0,
                                        int64_t r1, const GemvLane& at, const float (&xv)[CPT][elems_per_chunk<W>()],
                                        float* partial) {
  constexpr int U = gemv_rows_in_flight(CPT);
  constexpr int lanes_per_row = kGemvLanes / U;
  const int u_of_lane = at.lane / lanes_per_row;
#pragma unroll
  for (int m = 0; m < NM; ++m) {
    float p[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      p[u] = gemv_partial<W, CPT>(q[m][u], gemv_row_scale<W>(mats[m], r + u, r1), at.first, at.stride, xv);
    const float sum = slice_sums<U>(p, at.lane);
    if (at.lane % lanes_per_row == 0 && r + u_of_lane < r1)
      partial[(m * kGemvMaxSlices + at.slice) * kGemvMaxRows + (r + u_of_lane - r0)] = sum;
  }
}

// Streams rows [r0, r1) of the NM matrices mats (row r of each, as stored: data + row * rb,
// scales per scale_row_offset) against this thread's x and leaves in partial[m][slice][r - r0]
// the slice sums. The caller syncs the block before reading them. Each thread loads U rows'
// chunks into registers, then multiplies them (row_gemv_staged.hpp keeps the loads in flight
// while it multiplies).
template <WeightCode W, int CPT, int NM>
__device__ inline void gemv_rows(const DeviceMat (&mats)[NM], int64_t r0, int64_t r1,
                                 const float (&xv)[CPT][elems_per_chunk<W>()], float* partial) {
  constexpr int U = gemv_rows_in_flight(CPT);
  const GemvLane at;
  for (int64_t r = r0; r < r1; r += U) {
    uint4 q[NM][U][CPT];
    gemv_step_chunks<W, CPT, NM>(mats, r, r1, at, [&](int m, int u, int k, const uint4* p) { q[m][u][k] = *p; });
    gemv_rows_reduce<W, CPT, NM>(mats, q, r, r0, r1, at, xv, partial);
  }
}

// Row i's total over the slices, in slice order.
__device__ inline float gemv_total(const float* partial, int m, int64_t i) {
  const int slices = int(blockDim.x) / kGemvLanes;
  float s = 0.0f;
  for (int sl = 0; sl < slices; ++sl) s += partial[(m * kGemvMaxSlices + sl) * kGemvMaxRows + i];
  return s;
}

// The rows [r0, r1) block blockIdx.x of a single-token kernel finishes, of `rows` in all.
__device__ inline int64_t gemv_block_rows(int64_t rows, int64_t rows_per_block, int64_t& r1) {
  const int64_t r0 = int64_t(blockIdx.x) * rows_per_block;
  r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
  return r0;
}

// Calls f(integral_constant<WeightCode, W>, integral_constant<int, CPT>) for the encoding and
// chunk count of `shape` (as gemv_shape returned them), instantiating only the pairs whose x fits
// in registers: every single-token launcher dispatches through here.
template <class F>
void with_gemv_kernel(WeightCode code, const GemvShape& shape, F&& f) {
  auto for_cpt = [&](auto wc) {
    constexpr WeightCode W = decltype(wc)::value;
    auto call = [&](auto c) {
      if constexpr (W != WeightCode::F16 && decltype(c)::value <= gemv_max_cpt(W)) f(wc, c);
    };
    switch (shape.cpt) {
      case 1: call(std::integral_constant<int, 1>{}); return;
      case 2: call(std::integral_constant<int, 2>{}); return;
      case 4: call(std::integral_constant<int, 4>{}); return;
      default: call(std::integral_constant<int, 8>{}); return;
    }
  };
  with_weight_code(code, for_cpt);
}

}  // namespace moepage::ds4::gpu
