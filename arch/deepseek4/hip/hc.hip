// mHC on the GPU (hc.hpp). At batch 1 a site is a chain of tiny dependent steps, so launches and
// serial latency are the cost, not bytes:
// - the RMS norm of the flattened streams is never materialised: fn @ (x * r) = (fn @ x) * r, so
//   the blocks of hc_mix_kernel each take a chunk of the N*D columns (dot products with every fn
//   row plus the chunk's sum of squares) and the last block of a token to finish (a ticket counter)
//   adds the chunks up, applies r and computes the weights;
// - the Sinkhorn runs one lane per matrix entry in double (row/column sums by shuffles), so it
//   agrees with forward/hc.cpp hc_weights to float rounding. Its 39 dependent normalisations take
//   about 10 us on the H200, so a site may leave it to sinkhorn_kernel on a side stream, where it
//   runs beside the attention or MoE block that follows (nothing there reads comb);
// - collapse_norm_kernel fuses the collapse with the block's input RMSNorm;
// - for one token on a GPU with a multiprocessor per block, the collapse runs in hc_mix_kernel
//   itself: a block holds every stream of its columns, so once the finishing block has published
//   pre and the collapse's RMS scale (from the streams' Gram matrix, which the blocks add up with
//   the fn products: |u|^2 = pre' G pre), each block writes its columns of u and xn. The other
//   blocks wait for that on a flag; all of them are resident at once (one per multiprocessor at
//   most), so the wait cannot starve the finisher. This saves the second launch and its wait;
// - a prompt has bytes and arithmetic enough to fill the device: hc_prompt_kernel computes the
//   chunk partials of 32 tokens per block as a small matrix product, and a second launch with one
//   block per token (hc_finish_kernel) finishes the weights, instead of a finisher per token group.
#include "deepseek4/hip/hc.hpp"

#include <algorithm>
#include <string>

#include "deepseek4/hip/attention_reduce.hpp"
#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/dynamic_shared.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/row_dot.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kBlock = 256;
constexpr int kMixThreads = 256;
constexpr int kChunk = 256;           // values per block of hc_mix_kernel: kChunk / n columns of each stream
constexpr uint32_t kMaxStreams = 16;  // the CPU's hc_weights holds a 16x16 matrix
constexpr int kMaxMixes = int((2 + kMaxStreams) * kMaxStreams);
constexpr int kMaxGram = int(kMaxStreams * (kMaxStreams + 1) / 2);  // entries j <= k of the Gram matrix
constexpr uint32_t kFastStreams = 4;  // hc_mult of every released model: kernels unrolled for it

unsigned blocks_for(int64_t n) { return unsigned(std::max<int64_t>(1, (n + kBlock - 1) / kBlock)); }
// A block of hc_mix_kernel takes kChunk / n columns of every stream (so the collapse of its
// columns needs no other block's values).
int64_t cols_per_chunk(int64_t n) { return kChunk / n; }
int64_t chunks_for(int64_t n, int64_t d) { return (d + cols_per_chunk(n) - 1) / cols_per_chunk(n); }
__host__ __device__ inline int64_t gram_entries(int64_t n) { return n * (n + 1) / 2; }

__device__ inline double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

// 1/x to double precision without a double division on the Sinkhorn's serial path: a float seed
// (24 bits) and two Newton steps (48, then all 53 bits).
__device__ inline double recip(double x) {
  double y = double(1.0f / float(x));
  y = fma(y, fma(-x, y, 1.0), y);
  return fma(y, fma(-x, y, 1.0), y);
}

// Xout[s, k, e] of hc_post, in the CPU's order of operations (shared by the fused and plain
// paths). NS > 0: exactly NS streams, every load issued before the first use (a load used at once
// costs a full memory round trip each); NS == 0: any n.
template <int NS>
__device__ inline float post_mix(const float* block_out, const float* X, const float* post, const float* comb,
                                 int64_t s, uint32_t n, uint32_t d, uint32_t k, uint32_t e) {
  const float* cb = comb + s * n * n;
  if constexpr (NS > 0) {
    float cv[NS], xv[NS];
#pragma unroll
    for (int j = 0; j < NS; ++j) {
      cv[j] = cb[j * NS + k];
      xv[j] = X[(s * NS + j) * d + e];
    }
    double acc = double(post[s * NS + k]) * double(block_out[s * d + e]);
#pragma unroll
    for (int j = 0; j < NS; ++j) acc += double(cv[j]) * double(xv[j]);
    return float(acc);
  } else {
    double acc = double(post[s * n + k]) * double(block_out[s * d + e]);
    for (uint32_t j = 0; j < n; ++j) acc += double(cb[j * n + k]) * double(X[(s * n + j) * d + e]);
    return float(acc);
  }
}

struct MixArgs {
  DeviceMat fn;                                        // [R, N*D]
  const float *X, *block_out, *prev_post, *prev_comb;  // see HcInput
  float *Xout, *last_mean;
  const float *base, *scale;
  float *mixes, *partials, *pre, *post, *comb;  // post null: the head (pre only)
  uint32_t* tickets;
  int64_t nd, chunks, S;         // S: tokens of the batch
  int32_t n, d, R, iters, cols;  // cols: columns of every stream per block
  double hc_eps, rms_eps;
  // The collapse in the same launch (fused, one token): u and/or xn = rms_norm(u) * norm.
  bool fused;
  const float* norm;
  float *u, *xn;
  double* u_inv_rms;  // [S] the finisher's RMS scale of u
  uint32_t* flags;    // [S] bumped by the finisher once pre and u_inv_rms are out
  bool comb_later;    // the Sinkhorn runs in sinkhorn_kernel on another stream (from `mixes`)
};

// Streams, and columns of each stream per block: compile-time constants for exactly NS streams.
template <int NS>
__device__ inline int mix_streams(const MixArgs& a) {
  return NS > 0 ? NS : a.n;
}
template <int NS>
__device__ inline int mix_cols(const MixArgs& a) {
  return NS > 0 ? kChunk / NS : a.cols;
}

// Position in the flattened [N*D] streams of value i of a block (stream i / cols, column
// c0 + i % cols); -1 past the last column.
template <int NS>
__device__ inline int64_t flat_index(const MixArgs& a, int64_t c0, int i) {
  const int cols = mix_cols<NS>(a);
  const int64_t e = c0 + i % cols;
  return e < a.d ? int64_t(i / cols) * a.d + e : -1;
}

// Value f of token s's flattened streams: X, or with a pending hc_post folded in, the post-mixed
// value (written to Xout; the batch's last token also leaves the streams' mean for the predictor).
template <int NS>
__device__ inline float stream_value(const MixArgs& a, int64_t s, int64_t f) {
  if (f < 0) return 0.0f;
  if (!a.block_out) return a.X[s * a.nd + f];
  const float v = post_mix<NS>(a.block_out, a.X, a.prev_post, a.prev_comb, s, uint32_t(a.n), uint32_t(a.d),
                               uint32_t(f / a.d), uint32_t(f % a.d));
  a.Xout[s * a.nd + f] = v;
  if (a.last_mean && f < a.d && s == a.S - 1) {
    float sum = v;  // stream 0; the other streams' values are recomputed bit-identically
    if constexpr (NS > 0) {
      float others[NS];
#pragma unroll
      for (int k = 1; k < NS; ++k)  // all loads out before the sums
        others[k] = post_mix<NS>(a.block_out, a.X, a.prev_post, a.prev_comb, s, uint32_t(NS), uint32_t(a.d),
                                 uint32_t(k), uint32_t(f));
#pragma unroll
      for (int k = 1; k < NS; ++k) sum += others[k];
    } else {
      for (int32_t k = 1; k < a.n; ++k)
        sum += post_mix<0>(a.block_out, a.X, a.prev_post, a.prev_comb, s, uint32_t(a.n), uint32_t(a.d), uint32_t(k),
                           uint32_t(f));
    }
    a.last_mean[f] = sum / float(a.n);
  }
  return v;
}

// A warp's fn elements for rows r0, r0 + warps, ... (kRowsAtOnce of them) at this block's kChunk
// values, all loaded before any is used: at batch 1 the cost is memory round trips, not bytes.
constexpr int kPerLane = kChunk / MP_WARP_SIZE, kRowsAtOnce = 4;

template <WeightCode W, int NS>
__device__ inline void load_fn_rows(const MixArgs& a, int64_t c0, int r0, int warps, int lane, int vals,
                                    float (&w)[kRowsAtOnce][kPerLane]) {
#pragma unroll
  for (int q = 0; q < kRowsAtOnce; ++q) {
    const int r = r0 + q * warps;
    const int64_t row = a.fn.row_offset + (r < a.R ? r : 0);
    const uint8_t* rd = a.fn.data + row * row_bytes<W>(a.fn.cols);
    const uint8_t* rs = a.fn.scale ? a.fn.scale + scale_row_offset<W>(row, a.fn.cols) : nullptr;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = lane + k * MP_WARP_SIZE;
      const int64_t f = i < vals ? flat_index<NS>(a, c0, i) : -1;
      w[q][k] = r < a.R && f >= 0 ? decode_at<W>(rd, rs, f) : 0.0f;
    }
  }
}

// Those rows' dot products with one token's values xs, each into its row of the token's partials.
__device__ inline void store_fn_dots(const MixArgs& a, const float (&w)[kRowsAtOnce][kPerLane], const float* xs,
                                     float* part, int r0, int warps, int lane, int vals) {
#pragma unroll
  for (int q = 0; q < kRowsAtOnce; ++q) {
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = lane + k * MP_WARP_SIZE;
      if (i < vals) acc += w[q][k] * xs[i];
    }
    acc = warp_sum(acc);
    if (lane == 0 && r0 + q * warps < a.R) part[(r0 + q * warps) * a.chunks + blockIdx.x] = acc;
  }
}

// The fused collapse of this block's columns: u = sum_i pre_i X_i (double, stream order, like
// collapse_norm_kernel) and xn = u * r * norm with the finisher's r.
template <int NS>
__device__ void collapse_block_columns(const MixArgs& a, int64_t s, int64_t c0, const float* xs) {
  const int n = mix_streams<NS>(a), cols = mix_cols<NS>(a);
  const volatile float* pre = a.pre + s * n;  // written by the finishing block: bypass L1
  const double r = *static_cast<const volatile double*>(a.u_inv_rms + s);
  for (int j = int(threadIdx.x); j < cols && c0 + j < a.d; j += int(blockDim.x)) {
    double acc = 0;
    for (int i = 0; i < n; ++i) acc += double(pre[i]) * double(xs[i * cols + j]);
    const float v = float(acc);
    const int64_t e = c0 + j;
    if (a.u) a.u[s * a.d + e] = v;
    if (a.xn) a.xn[s * a.d + e] = a.norm ? float(double(v) * r * double(a.norm[e])) : float(double(v) * r);
  }
}

// Sum of v over the lanes j*n + 0..n-1 (columns = false) or 0..n-1 * n + k (columns = true) of
// lane j*n + k. A power-of-two n takes an xor butterfly, which never leaves the row (column) and
// never mixes the cells (lanes < n*n) with the idle lanes; any other n walks the row (column).
// Double sums: the order differs from the CPU's only far below float rounding.
__device__ inline double line_sum(double v, int n, int j, int k, bool columns) {
  if ((n & (n - 1)) == 0) {
    const int step = columns ? n : 1, end = columns ? n * n : n;
    for (int off = step; off < end; off <<= 1) v += MP_SHFL_XOR(v, off);
    return v;
  }
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += MP_SHFL(v, columns ? i * n + k : j * n + i);
  return sum;
}

// Warp 0 of the finishing block, lane j*n+k holding entry (j, k); needs n*n <= warp size.
__device__ void sinkhorn_warp(const MixArgs& a, int64_t s, const float* mx) {
  const int n = a.n, lane = int(threadIdx.x % MP_WARP_SIZE);
  const bool cell = lane < n * n;
  const int j = cell ? lane / n : 0, k = cell ? lane % n : 0;
  double v = cell ? double(mx[2 * n + lane]) * a.scale[2] + a.base[2 * n + lane] : -INFINITY;
  double row_max = -INFINITY;
  for (int kk = 0; kk < n; ++kk) row_max = fmax(row_max, MP_SHFL(v, j * n + kk));
  const double ex = cell ? exp(v - row_max) : 0.0;
  v = ex / line_sum(ex, n, j, k, false) + a.hc_eps;
  // A column normalisation, then iters-1 rounds of (rows, columns), like the CPU.
  for (int it = 0; it < (a.iters > 0 ? a.iters : 1); ++it) {
    if (it > 0) v *= recip(line_sum(v, n, j, k, false) + a.hc_eps);
    v *= recip(line_sum(v, n, j, k, true) + a.hc_eps);
  }
  if (cell) a.comb[s * n * n + lane] = float(v);
}

// The same for n*n above the warp size: thread j*n+k of the block, the matrix in shared memory.
// All threads of the block must call it.
__device__ void sinkhorn_block(const MixArgs& a, int64_t s, const float* mx, double* m) {
  const int n = a.n, t = int(threadIdx.x);
  const bool cell = t < n * n;
  const int j = cell ? t / n : 0, k = cell ? t % n : 0;
  if (cell) m[t] = double(mx[2 * n + t]) * a.scale[2] + a.base[2 * n + t];
  __syncthreads();
  double v = 0;
  if (cell) {
    double row_max = -INFINITY, sum = 0;
    for (int kk = 0; kk < n; ++kk) row_max = fmax(row_max, m[j * n + kk]);
    for (int kk = 0; kk < n; ++kk) sum += exp(m[j * n + kk] - row_max);
    v = exp(m[t] - row_max) / sum + a.hc_eps;
  }
  __syncthreads();
  if (cell) m[t] = v;
  __syncthreads();
  for (int it = 0; it < (a.iters > 0 ? a.iters : 1); ++it) {
    for (int pass = it > 0 ? 0 : 1; pass < 2; ++pass) {  // 0: rows, 1: columns
      double sum = 0;
      if (cell)
        for (int i = 0; i < n; ++i) sum += pass == 0 ? m[j * n + i] : m[i * n + k];
      __syncthreads();
      if (cell) m[t] *= recip(sum + a.hc_eps);
      __syncthreads();
    }
  }
  if (cell) a.comb[s * n * n + t] = float(m[t]);
}

// The finishing block's share for token s once every chunk's partials (rows of `part`) are in:
// the chunks added up (double) into sums, the mixes (mx and a.mixes), pre and post. All threads
// of the block call it.
__device__ void finish_token(const MixArgs& a, int64_t s, const float* part, int64_t part_rows, double* sums,
                             float* mx) {
  const int t = int(threadIdx.x), warps = int(blockDim.x) / MP_WARP_SIZE, warp = t / MP_WARP_SIZE;
  const int lane = t % MP_WARP_SIZE, n = a.n;
  const volatile float* vp = part;  // written by other blocks: bypass this SM's L1
  // Up to kFinishRows rows and kFinishChunks chunks per lane at a time, all their loads in flight
  // together: one L2 round trip for the 35 rows x 64 chunks of four streams, not four.
  constexpr int kFinishRows = 6, kFinishChunks = 2;
  for (int r0 = warp; r0 < part_rows; r0 += kFinishRows * warps) {
    float got[kFinishRows][kFinishChunks];
#pragma unroll
    for (int q = 0; q < kFinishRows; ++q)
#pragma unroll
      for (int c = 0; c < kFinishChunks; ++c) {
        const int64_t row = r0 + q * warps, ch = lane + c * MP_WARP_SIZE;
        got[q][c] = row < part_rows && ch < a.chunks ? vp[row * a.chunks + ch] : 0.0f;
      }
    double sum[kFinishRows] = {};
#pragma unroll
    for (int q = 0; q < kFinishRows; ++q) {
#pragma unroll
      for (int c = 0; c < kFinishChunks; ++c) sum[q] += double(got[q][c]);
      const int64_t row = r0 + q * warps;
      for (int64_t ch = lane + kFinishChunks * MP_WARP_SIZE; row < part_rows && ch < a.chunks; ch += MP_WARP_SIZE)
        sum[q] += double(vp[row * a.chunks + ch]);
    }
#pragma unroll
    for (int q = 0; q < kFinishRows; ++q) {
      const double total = warp_sum(sum[q]);
      if (lane == 0 && r0 + q * warps < part_rows) sums[r0 + q * warps] = total;
    }
  }
  __syncthreads();
  const double inv_rms = 1.0 / sqrt(sums[a.R] / double(a.nd) + a.rms_eps);
  for (int r = t; r < a.R; r += blockDim.x) {
    mx[r] = float(sums[r] * inv_rms);
    a.mixes[s * a.R + r] = mx[r];
  }
  __syncthreads();
  if (t < n) {
    a.pre[s * n + t] = float(sigmoid(double(mx[t]) * a.scale[0] + a.base[t]) + a.hc_eps);
    if (a.post) a.post[s * n + t] = float(2.0 * sigmoid(double(mx[n + t]) * a.scale[1] + a.base[n + t]));
  }
}

// The finishing block's Sinkhorn for token s, unless sinkhorn_kernel runs it on a side stream.
// All threads of the block call it.
__device__ void finish_comb(const MixArgs& a, int64_t s, const float* mx, double* m) {
  if (!a.post || a.comb_later) return;
  if (a.n * a.n <= MP_WARP_SIZE) {
    if (threadIdx.x < MP_WARP_SIZE) sinkhorn_warp(a, s, mx);
  } else {
    sinkhorn_block(a, s, mx, m);
  }
}

// grid (chunks, S). Each block: every stream of its columns (possibly post-mixed), the dot
// product of every fn row with them, their sum of squares and (fused) their Gram matrix; the
// token's last block finishes the weights, and (fused) every block then collapses its columns.
template <WeightCode W, int NS>
__global__ void __launch_bounds__(kMixThreads) hc_mix_kernel(MixArgs a) {
  kernel_entry();
  __shared__ float xs[kChunk];
  __shared__ double red[kMixThreads / MP_MIN_WARP_SIZE];
  __shared__ double sums[kMaxMixes + 1 + kMaxGram];
  __shared__ float mx[kMaxMixes];
  __shared__ double m[kMaxStreams * kMaxStreams];
  __shared__ bool last;
  const int64_t s = blockIdx.y;
  const int n = mix_streams<NS>(a), cols = mix_cols<NS>(a), vals = n * cols;
  const int64_t c0 = int64_t(blockIdx.x) * cols;
  const int t = int(threadIdx.x), warps = int(blockDim.x) / MP_WARP_SIZE, warp = t / MP_WARP_SIZE;
  const int lane = t % MP_WARP_SIZE;
  // The flag before this block's ticket: the finisher bumps it only after every ticket is in.
  uint32_t flag0 = 0;
  if (a.fused && t == 0) flag0 = *static_cast<volatile uint32_t*>(a.flags + s);

  double ss = 0;
  for (int i = t; i < vals; i += blockDim.x) {
    const float v = stream_value<NS>(a, s, flat_index<NS>(a, c0, i));
    xs[i] = v;
    ss += double(v) * double(v);
  }
  ss = block_sum(ss, red);  // its barrier also publishes xs

  const int64_t part_rows = a.R + 1 + (a.fused ? gram_entries(n) : 0);
  float* part = a.partials + s * part_rows * a.chunks;
  for (int r0 = warp; r0 < a.R; r0 += kRowsAtOnce * warps) {
    float w[kRowsAtOnce][kPerLane];
    load_fn_rows<W, NS>(a, c0, r0, warps, lane, vals, w);
    store_fn_dots(a, w, xs, part, r0, warps, lane, vals);
  }
  if (t == 0) part[a.R * a.chunks + blockIdx.x] = float(ss);
  if (a.fused) {  // Gram entry (j, k), j <= k, of this block's columns: one warp each
    for (int g = warp; g < gram_entries(n); g += warps) {
      int j = 0, rest = g;
      while (rest >= n - j) rest -= n - j++;
      const int k = j + rest;
      double acc = 0;
      for (int c = lane; c < cols; c += MP_WARP_SIZE) acc += double(xs[j * cols + c]) * double(xs[k * cols + c]);
      acc = warp_sum(acc);
      if (lane == 0) part[(a.R + 1 + g) * a.chunks + blockIdx.x] = float(acc);
    }
  }

  // The fence orders this block's partials before its ticket; the block drawing the last ticket
  // sees every other block's partials.
  __threadfence();
  __syncthreads();
  if (t == 0) last = atomicAdd(a.tickets + s, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) {
    if (!a.fused) return;
    if (t == 0)
      while (*static_cast<volatile uint32_t*>(a.flags + s) == flag0) {
      }
    __syncthreads();
    __threadfence();
    collapse_block_columns<NS>(a, s, c0, xs);
    return;
  }
  __threadfence();
  finish_token(a, s, part, part_rows, sums, mx);
  if (t == 0) a.tickets[s] = 0;  // ready for the next launch (stream order publishes it)
  if (a.fused) {
    // |u|^2 = sum_jk pre_j pre_k G_jk, then the RMS scale for every block's collapse. Each
    // writer of pre fences, so the flag below publishes pre as well.
    __threadfence();
    __syncthreads();
    if (t == 0) {
      const volatile float* pre = a.pre + s * n;
      double uu = 0;
      for (int j = 0, g = 0; j < n; ++j)
        for (int k = j; k < n; ++k, ++g)
          uu += (j == k ? 1.0 : 2.0) * double(pre[j]) * double(pre[k]) * sums[a.R + 1 + g];
      a.u_inv_rms[s] = 1.0 / sqrt(uu / double(a.d) + a.rms_eps);  // the blocks' RMSNorm eps too
      __threadfence();
      atomicAdd(a.flags + s, 1u);
    }
  }
  finish_comb(a, s, mx, m);
  if (a.fused) {
    __syncthreads();
    collapse_block_columns<NS>(a, s, c0, xs);
  }
}

// The prompt path (S >= kPromptMinTokens) takes two launches. hc_prompt_kernel, grid (chunks,
// ceil(S / kPromptTokens)), writes the chunk partials of hc_mix_kernel (less the Gram matrix) for
// kPromptTokens tokens at once: their dot products with fn are a small matrix product from shared
// memory, fn decoded once per block. Thread (token tt, slice sl) keeps a float sum per fn row over
// its kSliceValues values; a warp is one slice of 32 tokens, so its fn reads are broadcasts (one
// address) and its stream reads hit distinct banks. The slices are then added through shared
// memory. hc_finish_kernel, one block per token, finishes the weights: no serial tail over tokens.
constexpr int kPromptMinTokens = 8;
constexpr int kPromptTokens = 32;
constexpr int kPromptSlices = kMixThreads / kPromptTokens;
constexpr int kSliceValues = kChunk / kPromptSlices;
// Floats per token in xs: 4 more than a chunk (4 mod 32 banks), so the float4 reads of a quarter
// warp (8 consecutive tokens) cover all 32 banks.
constexpr int kTokenPitch = kChunk + 4;
constexpr int kRowGroup = 24;  // fn rows per pass: all (2 + 4) * 4 rows of a site with 4 streams
static_assert(kMixThreads == kChunk, "the fn staging gives each thread one value of the chunk");
static_assert(kSliceValues % 4 == 0, "slices are read as float4");

// Doubles at the start of hc_prompt_kernel's shared memory: the tokens' hc_post coefficients while
// the streams are read (NS > 0: post[k], then comb[j * NS + k]), then each thread's sum of squares.
__host__ __device__ constexpr int prompt_coefs(int ns) { return ns + ns * ns; }
__host__ __device__ constexpr int prompt_aux_doubles(int ns) {
  return kPromptTokens * prompt_coefs(ns) > kMixThreads ? kPromptTokens * prompt_coefs(ns) : kMixThreads;
}
// Then xs [kPromptTokens][kTokenPitch] and fw [kChunk][G] (the slices' sums after the products).
__host__ __device__ constexpr size_t prompt_shared_bytes(int ns, int g) {
  return size_t(prompt_aux_doubles(ns)) * sizeof(double) +
         size_t(kPromptTokens * kTokenPitch + kChunk * g) * sizeof(float);
}

// The block's tokens' post and comb of the pending hc_post, as doubles (zero past the batch).
template <int NS>
__device__ void stage_post_coefs(const MixArgs& a, int64_t s0, double* coef) {
  constexpr int per = prompt_coefs(NS);
  for (int q = int(threadIdx.x); q < kPromptTokens * per; q += int(blockDim.x)) {
    const int64_t s = s0 + q / per;
    const int e = q % per;
    float v = 0.0f;
    if (s < a.S) v = e < NS ? a.prev_post[s * NS + e] : a.prev_comb[s * NS * NS + e - NS];
    coef[q] = double(v);
  }
}

// post_mix of one token and column for every stream k at once, from the token's coefficients cf:
// the same operations in the same order, so the same bits.
template <int NS>
__device__ inline void post_mix_staged(const double* cf, float bo, const float (&x)[NS], float (&v)[NS]) {
  double c[prompt_coefs(NS)], dx[NS];
  const double2* cf2 = reinterpret_cast<const double2*>(cf);  // 16-byte aligned: prompt_coefs(4) is even
#pragma unroll
  for (int q = 0; q < prompt_coefs(NS) / 2; ++q) {
    const double2 p = cf2[q];
    c[2 * q] = p.x;
    c[2 * q + 1] = p.y;
  }
#pragma unroll
  for (int j = 0; j < NS; ++j) dx[j] = double(x[j]);
  const double db = double(bo);
#pragma unroll
  for (int k = 0; k < NS; ++k) {
    double acc = c[k] * db;
#pragma unroll
    for (int j = 0; j < NS; ++j) acc += c[NS + j * NS + k] * dx[j];
    v[k] = float(acc);
  }
}

// Token tt's value of stream k at column c of the block into xs[tt][k * cols + c] (the slot of
// flat_index), zero past the batch or the streams' width; with a pending hc_post, the post-mixed
// value, also written to Xout (and the last token's stream mean to last_mean), as stream_value.
// NS > 0 (launched only where prompt_quads holds): thread items of four adjacent columns, moved
// as float4, an item's loads all out before its first use, and each column post-mixed as
// stream_value does it, so the same bits. (Items of one column took four times the loads, stores
// and their address arithmetic: half of the kernel's instructions, H100 ncu, 2026-12-06.) NS == 0:
// stream_value itself, value by value.
template <int NS>
__device__ void stage_streams(const MixArgs& a, int64_t s0, const double* coef, float* xs) {
  if constexpr (NS > 0) {
    constexpr int cols = kChunk / NS, quads = cols / 4, items = kPromptTokens * quads / kMixThreads;
    static_assert(cols % 4 == 0 && items * kMixThreads == kPromptTokens * quads, "whole float4 items per thread");
    const int64_t c0 = int64_t(blockIdx.x) * cols;
#pragma unroll 1
    for (int j = 0; j < items; ++j) {  // an item's loads all out before its first use
      const int q = int(threadIdx.x) + j * kMixThreads, tt = q / quads, c = 4 * (q % quads);
      const int64_t s = s0 + tt, e = c0 + c;
      const bool in = s < a.S && e < a.d;  // a.d % 4 == 0: the quad is in or out whole
      const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      float4 xv[NS];
#pragma unroll
      for (int k = 0; k < NS; ++k) xv[k] = in ? *reinterpret_cast<const float4*>(a.X + (s * NS + k) * a.d + e) : zero;
      const float4 bo = in && a.block_out ? *reinterpret_cast<const float4*>(a.block_out + s * a.d + e) : zero;
      const bool mixed = a.block_out && in;
      float v[4][NS];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        float x[NS];
#pragma unroll
        for (int k = 0; k < NS; ++k) x[k] = (&xv[k].x)[u];
        if (mixed) post_mix_staged<NS>(coef + tt * prompt_coefs(NS), (&bo.x)[u], x, v[u]);
        else
#pragma unroll
          for (int k = 0; k < NS; ++k) v[u][k] = x[k];
      }
#pragma unroll
      for (int k = 0; k < NS; ++k) {
        const float4 out = make_float4(v[0][k], v[1][k], v[2][k], v[3][k]);
        *reinterpret_cast<float4*>(xs + tt * kTokenPitch + k * cols + c) = out;
        if (mixed) *reinterpret_cast<float4*>(a.Xout + (s * NS + k) * a.d + e) = out;
      }
      if (mixed && a.last_mean && s == a.S - 1) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          float sum = v[u][0];  // float sums in stream order, as stream_value
#pragma unroll
          for (int k = 1; k < NS; ++k) sum += v[u][k];
          a.last_mean[e + u] = sum / float(NS);
        }
      }
    }
  } else {
    const int vals = a.n * a.cols;
    const int64_t c0 = int64_t(blockIdx.x) * a.cols;
    for (int q = int(threadIdx.x); q < kPromptTokens * kChunk; q += int(blockDim.x)) {
      const int tt = q / kChunk, i = q % kChunk;
      const int64_t s = s0 + tt;
      xs[tt * kTokenPitch + i] = s < a.S && i < vals ? stream_value<0>(a, s, flat_index<0>(a, c0, i)) : 0.0f;
    }
  }
}

// fn rows r0 .. r0 + G - 1 (zero past R) at the block's values, decoded: fw[i][r], the G rows of
// value i side by side so one float4 read fetches four rows. Thread i takes value i.
template <WeightCode W, int NS, int G>
__device__ void stage_fn_rows(const MixArgs& a, int r0, float* fw) {
  const int i = int(threadIdx.x), vals = mix_streams<NS>(a) * mix_cols<NS>(a);
  const int64_t f = i < vals ? flat_index<NS>(a, int64_t(blockIdx.x) * mix_cols<NS>(a), i) : -1;
  float w[G];
#pragma unroll
  for (int r = 0; r < G; ++r) {
    const bool live = r0 + r < a.R && f >= 0;
    const int64_t row = a.fn.row_offset + (r0 + r < a.R ? r0 + r : 0);
    const uint8_t* rd = a.fn.data + row * row_bytes<W>(a.fn.cols);
    const uint8_t* rs = a.fn.scale ? a.fn.scale + scale_row_offset<W>(row, a.fn.cols) : nullptr;
    w[r] = live ? decode_at<W>(rd, rs, f) : 0.0f;
  }
  float4* dst = reinterpret_cast<float4*>(fw) + i * (G / 4);
#pragma unroll
  for (int q = 0; q < G / 4; ++q) dst[q] = make_float4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
}

// Thread (tt, sl): float sums of token tt's values in slice sl times each of the G rows of fw, and
// the values' sum of squares in double.
template <int G>
__device__ inline void slice_dots(const float* xs, const float* fw, int tt, int sl, float (&acc)[G], double& ss) {
  const float* x = xs + tt * kTokenPitch + sl * kSliceValues;
  const float4* w = reinterpret_cast<const float4*>(fw) + sl * kSliceValues * (G / 4);
#pragma unroll
  for (int r = 0; r < G; ++r) acc[r] = 0.0f;
  ss = 0;
#pragma unroll
  for (int i = 0; i < kSliceValues; i += 4) {
    const float4 x4 = *reinterpret_cast<const float4*>(x + i);
    const float xq[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      ss += double(xq[u]) * double(xq[u]);
#pragma unroll
      for (int q = 0; q < G / 4; ++q) {
        const float4 wq = w[(i + u) * (G / 4) + q];
        acc[4 * q] += xq[u] * wq.x;
        acc[4 * q + 1] += xq[u] * wq.y;
        acc[4 * q + 2] += xq[u] * wq.z;
        acc[4 * q + 3] += xq[u] * wq.w;
      }
    }
  }
}

// The slices' sums, added in slice order, into the tokens' partials [token][R + 1][chunks] at this
// block's chunk: rows r0 .. r0 + G - 1, and (first pass) row R, the sum of squares. red takes the
// place of fw, ssq that of the coefficients.
template <int G>
__device__ void store_slice_sums(const MixArgs& a, int64_t s0, int r0, const float (&acc)[G], double ss, float* red,
                                 double* ssq) {
  const int t = int(threadIdx.x), tt = t % kPromptTokens, sl = t / kPromptTokens;
  __syncthreads();  // every thread is done reading fw
#pragma unroll
  for (int r = 0; r < G; ++r) red[(sl * G + r) * kPromptTokens + tt] = acc[r];
  ssq[t] = ss;
  __syncthreads();
  const int64_t part_rows = a.R + 1;
  for (int o = t; o < G * kPromptTokens; o += int(blockDim.x)) {
    const int r = o / kPromptTokens, ot = o % kPromptTokens;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kPromptSlices; ++j) sum += red[(j * G + r) * kPromptTokens + ot];
    if (s0 + ot < a.S && r0 + r < a.R) a.partials[((s0 + ot) * part_rows + r0 + r) * a.chunks + blockIdx.x] = sum;
  }
  if (r0 == 0 && t < kPromptTokens && s0 + t < a.S) {
    double sum = 0;
#pragma unroll
    for (int j = 0; j < kPromptSlices; ++j) sum += ssq[j * kPromptTokens + t];
    a.partials[((s0 + t) * part_rows + a.R) * a.chunks + blockIdx.x] = float(sum);
  }
}

// NS > 0: exactly NS streams; G: fn rows per pass (any R: the passes loop).
template <WeightCode W, int NS, int G>
__global__ void __launch_bounds__(kMixThreads) hc_prompt_kernel(MixArgs a) {
  kernel_entry();
  extern __shared__ float4 hc_prompt_shared[];
  double* aux = reinterpret_cast<double*>(hc_prompt_shared);
  float* xs = reinterpret_cast<float*>(aux + prompt_aux_doubles(NS));
  float* fw = xs + kPromptTokens * kTokenPitch;
  const int64_t s0 = int64_t(blockIdx.y) * kPromptTokens;
  const int t = int(threadIdx.x);
  if constexpr (NS > 0) {
    if (a.block_out) {
      stage_post_coefs<NS>(a, s0, aux);
      __syncthreads();
    }
  }
  stage_streams<NS>(a, s0, aux, xs);
  for (int r0 = 0; r0 < a.R; r0 += G) {
    stage_fn_rows<W, NS, G>(a, r0, fw);
    __syncthreads();  // also publishes xs (first pass)
    float acc[G];
    double ss;
    slice_dots<G>(xs, fw, t % kPromptTokens, t / kPromptTokens, acc, ss);
    store_slice_sums<G>(a, s0, r0, acc, ss, fw, aux);
    __syncthreads();  // the sums are read before the next pass's fn overwrites them
  }
}

// One block per token of the prompt path: what hc_mix_kernel's finishing block does for it.
__global__ void __launch_bounds__(kMixThreads) hc_finish_kernel(MixArgs a) {
  kernel_entry();
  __shared__ double sums[kMaxMixes + 1];
  __shared__ float mx[kMaxMixes];
  __shared__ double m[kMaxStreams * kMaxStreams];
  const int64_t s = blockIdx.x, part_rows = a.R + 1;
  finish_token(a, s, a.partials + s * part_rows * a.chunks, part_rows, sums, mx);
  finish_comb(a, s, mx, m);
}

// Whether hc_prompt_kernel's stream staging may move four columns at once: whole quads of
// columns, 16-byte aligned (every released model; otherwise the value-by-value kernel).
bool prompt_quads(const MixArgs& a) {
  const auto bits =
      reinterpret_cast<uintptr_t>(a.X) | reinterpret_cast<uintptr_t>(a.block_out) | reinterpret_cast<uintptr_t>(a.Xout);
  return a.d % 4 == 0 && bits % 16 == 0;
}

// Both launches of the prompt path on `stream` (so sinkhorn_kernel, forked after them, sees mixes).
template <WeightCode W, int NS, int G>
void launch_prompt(const MixArgs& a, Stream stream) {
  const size_t smem = prompt_shared_bytes(NS, G);
  allow_dynamic_shared(reinterpret_cast<const void*>(&hc_prompt_kernel<W, NS, G>), smem);
  const dim3 grid(unsigned(a.chunks), unsigned((a.S + kPromptTokens - 1) / kPromptTokens));
  launch("gpu mHC hc_prompt_kernel", hc_prompt_kernel<W, NS, G>, grid, kMixThreads, smem, native(stream), a);
  launch("gpu mHC hc_finish_kernel", hc_finish_kernel, unsigned(a.S), kMixThreads, 0, native(stream), a);
}

// The Sinkhorn of a site whose weights kernel left it out (comb_later): one block per token from
// the mixes that kernel wrote, so it can run beside the block that follows the site.
__global__ void __launch_bounds__(kMaxStreams* kMaxStreams) sinkhorn_kernel(MixArgs a) {
  kernel_entry();
  __shared__ double m[kMaxStreams * kMaxStreams];
  const int64_t s = blockIdx.x;
  const float* mx = a.mixes + s * a.R;
  if (a.n * a.n <= MP_WARP_SIZE) {
    if (threadIdx.x < MP_WARP_SIZE) sinkhorn_warp(a, s, mx);
  } else {
    sinkhorn_block(a, s, mx, m);
  }
}

// One block per token: u = sum_i pre_i X[s, i] (double, stream order, like the CPU collapse),
// then optionally xn = rms_norm(u) * norm (double sums, like cpu::rms_norm). Each thread takes
// PerThread columns at once with every load issued before any sum (one memory round trip, not one
// per column), and keeps them in registers for the norm when they cover d. A lone token takes
// 1,024 threads of 4 columns (the shortest chain); a batch 512 of 8, two blocks a
// multiprocessor, so some blocks' loads fly while others sum: one block of 1,024 per
// multiprocessor ran at 1.39 TB/s, its reduction and stores leaving the memory idle (H100 ncu,
// 2026-12-06).
constexpr int kCollapseTokenThreads = 1024, kCollapseBatchThreads = 512;
__host__ __device__ constexpr int collapse_per_thread(int threads) { return threads == kCollapseTokenThreads ? 4 : 8; }
__host__ __device__ constexpr int collapse_blocks_per_sm(int threads) {
  return threads == kCollapseTokenThreads ? 1 : 2;
}

template <int NS, int PerThread>
__device__ inline void collapse_columns(const float* __restrict__ x, const float* __restrict__ p, uint32_t n,
                                        uint32_t d, uint32_t e0, float (&v)[PerThread]) {
  if constexpr (NS > 0) {  // exactly NS streams: every load first, then the sums
    float pv[NS], xv[PerThread][NS];
#pragma unroll
    for (int i = 0; i < NS; ++i) pv[i] = p[i];
#pragma unroll
    for (int k = 0; k < PerThread; ++k) {
      const uint32_t e = e0 + threadIdx.x + uint32_t(k) * blockDim.x;
#pragma unroll
      for (int i = 0; i < NS; ++i) xv[k][i] = e < d ? x[uint32_t(i) * d + e] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < PerThread; ++k) {
      double acc = 0;
#pragma unroll
      for (int i = 0; i < NS; ++i) acc += double(pv[i]) * double(xv[k][i]);
      v[k] = float(acc);
    }
  } else {
    for (int k = 0; k < PerThread; ++k) {
      const uint32_t e = e0 + threadIdx.x + uint32_t(k) * blockDim.x;
      double acc = 0;
      for (uint32_t i = 0; i < n && e < d; ++i) acc += double(p[i]) * double(x[i * d + e]);
      v[k] = float(acc);
    }
  }
}

template <int NS, int Threads>
__global__ void __launch_bounds__(Threads, collapse_blocks_per_sm(Threads))
    collapse_norm_kernel(const float* __restrict__ X, const float* __restrict__ pre, uint32_t n, uint32_t d,
                         const float* __restrict__ norm, float eps, float* __restrict__ u, float* __restrict__ xn) {
  kernel_entry();
  constexpr int PerThread = collapse_per_thread(Threads);
  __shared__ double red[Threads / MP_MIN_WARP_SIZE];
  const int64_t s = blockIdx.x;
  const float* x = X + s * n * d;
  const float* p = pre + s * n;
  const uint32_t span = PerThread * blockDim.x;
  float v[PerThread];
  double ss = 0;
  for (uint32_t e0 = 0; e0 < d; e0 += span) {
    collapse_columns<NS, PerThread>(x, p, n, d, e0, v);
#pragma unroll
    for (int k = 0; k < PerThread; ++k) {
      const uint32_t e = e0 + threadIdx.x + uint32_t(k) * blockDim.x;
      if (e >= d) continue;
      if (u) u[s * d + e] = v[k];
      ss += double(v[k]) * double(v[k]);
    }
  }
  if (!xn) return;
  ss = block_sum(ss, red);
  const double r = 1.0 / sqrt(ss / double(d) + double(eps));
  for (uint32_t e0 = 0; e0 < d; e0 += span) {
    if (d > span) collapse_columns<NS, PerThread>(x, p, n, d, e0, v);  // else v still holds the only span
#pragma unroll
    for (int k = 0; k < PerThread; ++k) {
      const uint32_t e = e0 + threadIdx.x + uint32_t(k) * blockDim.x;
      if (e < d) xn[s * d + e] = norm ? float(double(v[k]) * r * double(norm[e])) : float(double(v[k]) * r);
    }
  }
}

template <int NS>
__global__ void hc_post_kernel(const float* block_out, const float* X, const float* post, const float* comb, int64_t S,
                               uint32_t n, uint32_t d, float* Xout) {
  kernel_entry();
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= S * n * d) return;
  const int64_t e = id % d, k = (id / d) % n, s = id / (int64_t(d) * n);
  Xout[id] = post_mix<NS>(block_out, X, post, comb, s, n, d, uint32_t(k), uint32_t(e));
}

void check_streams(const Config& c) {
  if (c.hc_mult == 0 || c.hc_mult > kMaxStreams)
    throw GpuError("gpu mHC: hc_mult " + std::to_string(c.hc_mult) + " is outside 1.." + std::to_string(kMaxStreams));
}

// Where the collapse `fused` asks for goes: u and/or xn = rms_norm(u) * norm.
struct FusedCollapse {
  const float* norm = nullptr;
  float *u = nullptr, *xn = nullptr;
};

// hc_mix_kernel for a block site (post/comb set) or the head (pre only); with `fused`, also the
// collapse of the streams it read (one token only).
void launch_mix(const GpuHcParams& p, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& sc,
                float* post, float* comb, Stream stream, const FusedCollapse* fused = nullptr,
                SideStream* comb_side = nullptr) {
  check_streams(c);
  const int64_t n = c.hc_mult, d = c.hidden_size, nd = n * d;
  const int64_t R = post ? (2 + n) * n : n;
  if (p.fn.rows != R || p.fn.cols != nd)
    throw GpuError("gpu mHC: fn is [" + std::to_string(p.fn.rows) + ", " + std::to_string(p.fn.cols) + "], expected [" +
                   std::to_string(R) + ", " + std::to_string(nd) + "]");
  if (S > sc.max_batch)
    throw GpuError("gpu mHC: batch of " + std::to_string(S) + " tokens, scratch sized for " +
                   std::to_string(sc.max_batch));
  if (in.block_out && (!in.post || !in.comb || !in.Xout || in.Xout == in.X))
    throw GpuError("gpu mHC: a fused hc_post needs post, comb and an Xout apart from X");
  if (fused && S != 1) throw GpuError("gpu mHC: the collapse runs in the weights launch for one token only");
  MixArgs a{};
  a.fn = device_mat(p.fn);
  a.X = in.X;
  a.block_out = in.block_out;
  a.prev_post = in.post;
  a.prev_comb = in.comb;
  a.Xout = in.Xout;
  a.last_mean = in.last_mean;
  a.base = p.base;
  a.scale = p.scale;
  a.mixes = sc.mixes;
  a.partials = sc.partials;
  a.pre = sc.pre;
  a.post = post;
  a.comb = comb;
  a.tickets = sc.tickets;
  a.nd = nd;
  a.chunks = chunks_for(n, d);
  a.S = S;
  a.n = int32_t(n);
  a.d = int32_t(d);
  a.R = int32_t(R);
  a.iters = int32_t(c.hc_sinkhorn_iters);
  a.cols = int32_t(cols_per_chunk(n));
  a.hc_eps = c.hc_eps;
  a.rms_eps = double(float(c.rms_norm_eps));
  a.fused = fused != nullptr;
  if (fused) {
    a.norm = fused->norm;
    a.u = fused->u;
    a.xn = fused->xn;
  }
  a.u_inv_rms = sc.u_inv_rms;
  a.flags = sc.flags;
  a.comb_later = post && comb_side;
  if (S >= kPromptMinTokens && !fused) {  // a prompt: blocks of kPromptTokens tokens, then a finish kernel
    with_weight_code(weight_code(p.fn, "gpu mHC fn"), [&](auto wc) {
      constexpr WeightCode W = decltype(wc)::value;
      if (n != kFastStreams || !prompt_quads(a)) launch_prompt<W, 0, kRowGroup>(a, stream);
      else if (R == n) launch_prompt<W, kFastStreams, kFastStreams>(a, stream);  // the head: one row per stream
      else launch_prompt<W, kFastStreams, kRowGroup>(a, stream);
    });
  } else {
    const dim3 grid(unsigned(a.chunks), unsigned(S));
    with_weight_code(weight_code(p.fn, "gpu mHC fn"), [&](auto wc) {
      if (n == kFastStreams)
        launch("gpu mHC hc_mix_kernel", hc_mix_kernel<decltype(wc)::value, kFastStreams>, grid, kMixThreads, 0,
               native(stream), a);
      else
        launch("gpu mHC hc_mix_kernel", hc_mix_kernel<decltype(wc)::value, 0>, grid, kMixThreads, 0, native(stream), a);
    });
  }
  if (a.comb_later) {
    const int cells = int(n * n), threads = (cells + MP_MIN_WARP_SIZE - 1) / MP_MIN_WARP_SIZE * MP_MIN_WARP_SIZE;
    launch("gpu mHC sinkhorn_kernel", sinkhorn_kernel, unsigned(S), unsigned(std::max(threads, int(MP_WARP_SIZE))), 0,
           native(comb_side->fork(stream)), a);
  }
}

// A site's (or the head's) weights, then the collapse of the streams they read (in.Xout when the
// previous hc_post is folded in) with its RMSNorm. One token on a GPU with a multiprocessor for
// every block: one launch (the blocks wait for the finisher; see the top). Otherwise two: folding
// the collapse into the finishing block alone made its serial tail longer (H200: 30 us per site)
// than a second launch spread over 1024 threads (24 us).
void mix_and_collapse(const GpuHcParams& p, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& sc,
                      float* post, float* comb, const float* norm, float* u, float* xn, Stream stream,
                      SideStream* comb_side = nullptr) {
  if (S == 1 && chunks_for(c.hc_mult, c.hidden_size) <= device_sm_count()) {
    const FusedCollapse fused{norm, u, xn};
    launch_mix(p, c, in, S, sc, post, comb, stream, &fused, comb_side);
    return;
  }
  launch_mix(p, c, in, S, sc, post, comb, stream, nullptr, comb_side);
  hc_collapse_norm(in.block_out ? in.Xout : in.X, sc, S, c.hc_mult, c.hidden_size, norm, float(c.rms_norm_eps), u, xn,
                   stream);
}

}  // namespace

GpuHcScratch allocate_hc_scratch(const Config& c, int64_t max_batch, DeviceArena& arena) {
  check_streams(c);
  const int64_t n = c.hc_mult, R = (2 + n) * n;
  GpuHcScratch sc;
  sc.mixes = arena.take<float>(uint64_t(max_batch * R));
  sc.pre = arena.take<float>(uint64_t(max_batch * n));
  sc.partials = arena.take<float>(uint64_t(max_batch * (R + 1 + gram_entries(n)) * chunks_for(n, c.hidden_size)));
  sc.tickets = arena.take<uint32_t>(uint64_t(max_batch));  // zero-filled by the arena
  sc.u_inv_rms = arena.take<double>(uint64_t(max_batch));
  sc.flags = arena.take<uint32_t>(uint64_t(max_batch));
  sc.max_batch = max_batch;
  return sc;
}

void hc_site_weights(const GpuHcParams& p, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& sc,
                     float* post, float* comb, Stream stream) {
  if (S <= 0) return;
  if (!post || !comb) throw GpuError("gpu mHC: a block site needs post and comb outputs");
  launch_mix(p, c, in, S, sc, post, comb, stream);
}

void hc_site(const GpuHcParams& p, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& sc, float* post,
             float* comb, const float* norm, float* xn, Stream stream, SideStream* comb_side) {
  if (S <= 0) return;
  if (!post || !comb || !xn) throw GpuError("gpu mHC: a block site needs post, comb and xn outputs");
  mix_and_collapse(p, c, in, S, sc, post, comb, norm, nullptr, xn, stream, comb_side);
}

void hc_collapse_norm(const float* X, const GpuHcScratch& sc, int64_t S, uint32_t n, uint32_t d, const float* norm,
                      float eps, float* u, float* xn, Stream stream) {
  if (S <= 0 || (!u && !xn)) return;
  auto go = [&](auto kernel, int threads) {
    launch("gpu mHC collapse_norm_kernel", kernel, unsigned(S), threads, 0, native(stream), X, sc.pre, n, d, norm, eps,
           u, xn);
  };
  constexpr int T1 = kCollapseTokenThreads, TB = kCollapseBatchThreads;
  if (n == kFastStreams && S == 1) go(collapse_norm_kernel<kFastStreams, T1>, T1);
  else if (n == kFastStreams) go(collapse_norm_kernel<kFastStreams, TB>, TB);
  else if (S == 1) go(collapse_norm_kernel<0, T1>, T1);
  else go(collapse_norm_kernel<0, TB>, TB);
}

void hc_pre(const GpuHcParams& p, const Config& c, const float* X, int64_t S, const GpuHcScratch& sc, float* post,
            float* comb, float* u, Stream stream) {
  HcInput in;
  in.X = X;
  hc_site_weights(p, c, in, S, sc, post, comb, stream);
  hc_collapse_norm(X, sc, S, c.hc_mult, c.hidden_size, nullptr, 0.0f, u, nullptr, stream);
}

void hc_post(const float* block_out, const float* X, const float* post, const float* comb, int64_t S, uint32_t n,
             uint32_t d, float* Xout, Stream stream) {
  if (S <= 0) return;
  if (n == kFastStreams)
    launch("gpu hc_post", hc_post_kernel<kFastStreams>, blocks_for(S * n * d), kBlock, 0, native(stream), block_out, X,
           post, comb, S, n, d, Xout);
  else
    launch("gpu hc_post", hc_post_kernel<0>, blocks_for(S * n * d), kBlock, 0, native(stream), block_out, X, post, comb,
           S, n, d, Xout);
}

void hc_head(const GpuHcParams& p, const Config& c, const float* X, int64_t S, const GpuHcScratch& sc, float* h,
             Stream stream, const float* norm, float* norm_out) {
  HcInput in;
  in.X = X;
  hc_head(p, c, in, S, sc, h, stream, norm, norm_out);
}

void hc_head(const GpuHcParams& p, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& sc, float* h,
             Stream stream, const float* norm, float* norm_out) {
  if (S <= 0) return;
  mix_and_collapse(p, c, in, S, sc, nullptr, nullptr, norm, h, norm_out, stream);
}

}  // namespace moepage::ds4::gpu
