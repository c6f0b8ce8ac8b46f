// Launchers and kernels of ops.hpp. Each kernel mirrors its CPU twin's arithmetic (double where
// the CPU reduces in double) so the kernel tests can hold them to tight tolerances.
#include "deepseek4/hip/ops.hpp"

#include <algorithm>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/dynamic_shared.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/library_gemm.hpp"
#include "deepseek4/hip/mma_matmul.hpp"
#include "deepseek4/hip/rope_pair.hpp"
#include "deepseek4/hip/row_dot.hpp"
#include "deepseek4/hip/row_gemv.hpp"
#include "deepseek4/hip/row_gemv_staged.hpp"
#include "deepseek4/hip/swiglu.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kBlock = 256;

unsigned blocks_for(int64_t n, int64_t per_block = kBlock) {
  return unsigned(std::max<int64_t>(1, (n + per_block - 1) / per_block));
}

// One warp per output row (grid-stride, so the warp count per block may differ between targets),
// the token tiles looped inside so the row is streamed from memory once and re-read from cache.
template <WeightCode W, int T>
__global__ void matmul_kernel(DeviceMat m, const float* x, int64_t ld_x, float* y, int64_t ld_y, int64_t n_tokens,
                              bool x_vec) {
  kernel_entry();
  const int64_t warps = blockDim.x / MP_WARP_SIZE;
  const int64_t warp = blockIdx.x * warps + threadIdx.x / MP_WARP_SIZE;
  const bool lane0 = threadIdx.x % MP_WARP_SIZE == 0;
  for (int64_t r = warp; r < m.rows; r += int64_t(gridDim.x) * warps) {
    for (int64_t t0 = 0; t0 < n_tokens; t0 += T) {
      const int64_t nt = n_tokens - t0 < T ? n_tokens - t0 : T;
      const float* xs[T];
#pragma unroll
      for (int t = 0; t < T; ++t) xs[t] = x + (t0 + (t < nt ? t : 0)) * ld_x;
      float acc[T];
      warp_row_dot<W, T>(m, m.row_offset + r, xs, x_vec, acc);
      if (lane0) {
#pragma unroll
        for (int t = 0; t < T; ++t)
          if (t < nt) y[(t0 + t) * ld_y + r] = acc[t];
      }
    }
  }
}

// The aligned fast path (row_dot.hpp): R rows per tile, one warp or one block per tile; the
// token tiles looped inside so the rows are streamed from memory once.
template <WeightCode W, int T, int R, bool Block>
__global__ void __launch_bounds__(kMaxTileThreads)
    matmul_tile_kernel(DeviceMat m, const float* x, int64_t ld_x, float* y, int64_t ld_y, int64_t n_tokens,
                       int64_t rows_per_group, int64_t x_group_stride) {
  kernel_entry();
  __shared__ float red[(Block ? kMaxTileThreads / MP_MIN_WARP_SIZE : 1) * R * T];
  constexpr int U = tile_unroll(T, R);
  const TileGroup<Block> g;
  const int64_t rb = row_bytes<W>(m.cols), n_chunks = rb / 16;
  const int64_t n_tiles = (m.rows + R - 1) / R;
  for (int64_t tile = g.id; tile < n_tiles; tile += g.count) {
    const uint4* rd[R];
    const uint8_t* rs[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t row = m.row_offset + (tile * R + r < m.rows ? tile * R + r : m.rows - 1);
      rd[r] = reinterpret_cast<const uint4*>(m.data + row * rb);
      rs[r] = has_block_scale<W>() ? m.scale + scale_row_offset<W>(row, m.cols) : nullptr;
    }
    // A tile never straddles two groups (the launcher keeps R a divisor of rows_per_group).
    const float* xg = x + (tile * R / rows_per_group) * x_group_stride;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += T) {
      const int64_t nt = n_tokens - t0 < T ? n_tokens - t0 : T;
      const float* xs[T];
#pragma unroll
      for (int t = 0; t < T; ++t) xs[t] = xg + (t0 + (t < nt ? t : 0)) * ld_x;
      float acc[R * T];
      tile_dot<W, T, R, U>(rd, rs, n_chunks, xs, g.first, g.stride, acc);
      group_sum<R * T, Block>(acc, red);
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int t = 0; t < T; ++t)
          if (g.first == r * T + t && tile * R + r < m.rows && t < nt)
            y[(t0 + t) * ld_y + tile * R + r] = acc[r * T + t];
    }
  }
}

// The single-token product with x in registers (row_gemv.hpp): block blockIdx.x finishes rows
// [r0, r0 + rows_per_block), all inside one group of the grouped product. S: the ring's steps
// (row_gemv_staged.hpp; 0: the register path). Norm: x's RMSNorm folded in (ungrouped only; a
// template flag, so the plain products keep their registers: the fold's code in every instance
// took wo_b's from 64 to 80 and it ran 15-20% slower, H100).
template <WeightCode W, int CPT, int S, bool Norm>
__global__ void __launch_bounds__(kGemvMaxSlices* kGemvLanes)
    matmul_gemv_kernel(DeviceMat m, const float* x, float* y, int64_t rows_per_group, int64_t x_group_stride,
                       int64_t rows_per_block, GemvInputNorm norm) {
  kernel_entry();
  __shared__ float partial[kGemvMaxSlices * kGemvMaxRows];
  int64_t r1;
  const int64_t r0 = gemv_block_rows(m.rows, rows_per_block, r1);
  float xv[CPT][elems_per_chunk<W>()];
  gemv_load_x<W, CPT>(x + (r0 / rows_per_group) * x_group_stride, threadIdx.x, blockDim.x, xv);
  double ss = 0;
  if constexpr (Norm) ss = gemv_fold_norm<W, CPT>(norm.gain, threadIdx.x, blockDim.x, xv);
  const DeviceMat mats[1] = {m};
  extern __shared__ uint4 gemv_ring[];
  gemv_rows_any<W, CPT, 1, S>(mats, r0, r1, xv, partial, gemv_ring);
  if constexpr (Norm) {
    // The slices' sums of squares after the rows: shuffles before them would hold back the first
    // weight loads until x had arrived.
    __shared__ double slice_ss[kGemvMaxSlices];
    ss = gemv_lanes_sum(ss);
    if (threadIdx.x % kGemvLanes == 0) slice_ss[threadIdx.x / kGemvLanes] = ss;
    __syncthreads();
    const double r = gemv_norm_scale(slice_ss, m.cols, norm.eps);
    for (int64_t i = threadIdx.x; i < r1 - r0; i += blockDim.x)
      y[r0 + i] = float(double(gemv_total(partial, 0, i)) * r);
  } else {
    __syncthreads();
    for (int64_t i = threadIdx.x; i < r1 - r0; i += blockDim.x) y[r0 + i] = gemv_total(partial, 0, i);
  }
}

// out[r] = swiglu(w1[r] . x, w3[r] . x) for one token: both products and the activation in one
// launch (the shared expert's up half at decode).
template <WeightCode W, int CPT, int S>
__global__ void __launch_bounds__(kGemvMaxSlices* kGemvLanes)
    swiglu_gemv_kernel(DeviceMat w1, DeviceMat w3, const float* x, float limit, float* out, int64_t rows_per_block) {
  kernel_entry();
  __shared__ float partial[2 * kGemvMaxSlices * kGemvMaxRows];
  int64_t r1;
  const int64_t r0 = gemv_block_rows(w1.rows, rows_per_block, r1);
  float xv[CPT][elems_per_chunk<W>()];
  gemv_load_x<W, CPT>(x, threadIdx.x, blockDim.x, xv);
  const DeviceMat mats[2] = {w1, w3};
  extern __shared__ uint4 gemv_ring[];
  gemv_rows_any<W, CPT, 2, S>(mats, r0, r1, xv, partial, gemv_ring);
  __syncthreads();
  for (int64_t i = threadIdx.x; i < r1 - r0; i += blockDim.x)
    out[r0 + i] = swiglu_value(gemv_total(partial, 0, i), gemv_total(partial, 1, i), limit);
}

// The wide tile of T tokens: R * T accumulators per thread at most 8.
constexpr int wide_rows(int T) { return T == 1 ? 4 : T <= 4 ? 2 : 1; }

// Double sums, like cpu::rms_norm. One block per row (as many threads as the row has float4s
// to spread, up to 1024, so the 16384-wide mHC rows are read by a whole block at once); rows of
// whole, aligned float4s are read 16 bytes at a time.
constexpr int kMaxNormThreads = 1024;

__global__ void __launch_bounds__(kMaxNormThreads)
    rms_norm_kernel(const float* x, int64_t n, int64_t ld, const float* weight, float eps, float* out, bool vec) {
  kernel_entry();
  __shared__ double partial[kMaxNormThreads / MP_MIN_WARP_SIZE];
  const float* row = x + int64_t(blockIdx.x) * ld;
  float* o = out + int64_t(blockIdx.x) * ld;
  double ss = 0;
  if (vec) {
    const float4* r4 = reinterpret_cast<const float4*>(row);
    for (int64_t i = threadIdx.x; i < n / 4; i += blockDim.x) {
      const float4 v = r4[i];
      ss +=
          double(v.x) * double(v.x) + double(v.y) * double(v.y) + double(v.z) * double(v.z) + double(v.w) * double(v.w);
    }
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += double(row[i]) * double(row[i]);
  }
  for (int off = MP_WARP_SIZE / 2; off > 0; off >>= 1) ss += MP_SHFL_XOR(ss, off);
  const int warp = threadIdx.x / MP_WARP_SIZE, warps = blockDim.x / MP_WARP_SIZE;
  if (threadIdx.x % MP_WARP_SIZE == 0) partial[warp] = ss;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < warps; ++w) total += partial[w];
  const double r = 1.0 / sqrt(total / double(n) + double(eps));
  if (vec) {
    const float4* r4 = reinterpret_cast<const float4*>(row);
    const float4* w4 = reinterpret_cast<const float4*>(weight);
    float4* o4 = reinterpret_cast<float4*>(o);
    for (int64_t i = threadIdx.x; i < n / 4; i += blockDim.x) {
      const float4 v = r4[i];
      float4 y;
      if (weight) {
        const float4 g = w4[i];
        y = make_float4(float(double(v.x) * r * double(g.x)), float(double(v.y) * r * double(g.y)),
                        float(double(v.z) * r * double(g.z)), float(double(v.w) * r * double(g.w)));
      } else {
        y = make_float4(float(double(v.x) * r), float(double(v.y) * r), float(double(v.z) * r), float(double(v.w) * r));
      }
      o4[i] = y;
    }
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      o[i] = weight ? float(double(row[i]) * r * double(weight[i])) : float(double(row[i]) * r);
  }
}

__global__ void rope_kernel(float* x, int64_t S, int64_t heads, int64_t ld_token, int64_t ld_head, int64_t col0,
                            int32_t half, const float* cos_t, const float* sin_t, int64_t pos0, int64_t pos_step,
                            bool inverse) {
  kernel_entry();
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= S * heads * half) return;
  const int64_t i = id % half, h = (id / half) % heads, s = id / (half * heads);
  const int64_t pos = pos0 + s * pos_step;
  const float c = cos_t[pos * half + i], sn = inverse ? -sin_t[pos * half + i] : sin_t[pos * half + i];
  float* p = x + s * ld_token + h * ld_head + col0 + 2 * i;
  const float2 r = rope_pair(p[0], p[1], c, sn);
  p[0] = r.x;
  p[1] = r.y;
}

__global__ void swiglu_kernel(const float* gate, const float* up, int64_t n, float limit, float* out) {
  kernel_entry();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = swiglu_value(gate[i], up[i], limit);
}

// One block row per token, threads over the columns; the decoded row goes to every stream.
template <WeightCode W>
__global__ void embed_kernel(DeviceMat table, const int32_t* tokens, int64_t copies, float* X) {
  kernel_entry();
  const int64_t s = blockIdx.y;
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= table.cols) return;
  const int32_t tok = tokens[s];
  // Ids are validated on the host before they reach the device; an id outside the table still
  // must not read out of bounds, so it embeds as zeros.
  float v = 0.0f;
  if (tok >= 0 && tok < table.rows) {
    const int64_t row = table.row_offset + tok;
    v = decode_at<W>(table.data + row * row_bytes<W>(table.cols),
                     table.scale ? table.scale + scale_row_offset<W>(row, table.cols) : nullptr, c);
  }
  for (int64_t i = 0; i < copies; ++i) X[(s * copies + i) * table.cols + c] = v;
}

// Float sums in stream order, like the CPU Model's observe_layer.
__global__ void stream_mean_kernel(const float* streams, int32_t n, int64_t d_model, float* mean) {
  kernel_entry();
  const int64_t d = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (d >= d_model) return;
  float sum = 0.0f;
  for (int32_t i = 0; i < n; ++i) sum += streams[i * d_model + d];
  mean[d] = sum / float(n);
}

}  // namespace

int device_sm_count() {
  static const int count = [] {
    int device = 0;
    MP_GPU_CHECK(hipGetDevice(&device));
    hipDeviceProp_t prop;
    MP_GPU_CHECK(hipGetDeviceProperties(&prop, device));
    return prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
  }();
  return count;
}

namespace {

// The single-token launch (row_gemv.hpp) when its shape applies; false otherwise.
bool matmul_gemv(const DeviceMat& m, WeightCode code, const float* x, int64_t x_group_stride, int64_t rows_per_group,
                 float* y, int stages, Stream stream, const GemvInputNorm& norm = {}) {
  const GemvShape shape = gemv_shape(code, row_bytes_of(code, m.cols) / 16);
  if (shape.slices == 0) return false;
  int64_t per_block = gemv_rows_per_block(m.rows, 1, shape.slices);
  if (rows_per_group < m.rows)  // grouped: a block's rows share one group's x
    while (rows_per_group % per_block != 0) --per_block;
  const unsigned grid = unsigned((m.rows + per_block - 1) / per_block);
  auto launch_kernel = [&](auto kernel, int ring_steps, int cpt) {
    const unsigned threads = unsigned(shape.slices * kGemvLanes);
    const size_t ring = gemv_ring_bytes(ring_steps, cpt, 1, int(threads));
    allow_dynamic_shared(reinterpret_cast<const void*>(kernel), ring);
    launch("gpu matmul (single token)", kernel, grid, threads, ring, native(stream), m, x, y, rows_per_group,
           x_group_stride, per_block, norm);
  };
  with_gemv_stages(stages, [&](auto st) {
    constexpr int S = decltype(st)::value;
    with_gemv_kernel(code, shape, [&](auto wc, auto c) {
      constexpr int CPT = decltype(c)::value;
      constexpr WeightCode W = decltype(wc)::value;
      constexpr int R = gemv_ring_steps(W, S, CPT, 1);
      if (norm.on) launch_kernel(matmul_gemv_kernel<W, CPT, R, true>, R, CPT);
      else launch_kernel(matmul_gemv_kernel<W, CPT, R, false>, R, CPT);
    });
  });
  return true;
}

// The tiled launch of matmul / matmul_grouped when its preconditions hold; false otherwise.
bool matmul_tiles(const DeviceMat& m, WeightCode code, const float* x, int64_t ld_x, int64_t x_group_stride,
                  int64_t rows_per_group, float* y, int64_t ld_y, int64_t n_tokens, int gemv_stages, Stream stream) {
  if (code == WeightCode::F16 || !tiles_apply(m, code, x, ld_x, n_tokens) || x_group_stride % 4 != 0) return false;
  if (n_tokens == 1 && matmul_gemv(m, code, x, x_group_stride, rows_per_group, y, gemv_stages, stream)) return true;
  with_weight_code(code, [&](auto wc) {
    constexpr WeightCode W = decltype(wc)::value;
    if constexpr (W != WeightCode::F16) {
      with_token_tile(n_tokens, [&](auto tile) {
        constexpr int T = decltype(tile)::value, RW = wide_rows(T);
        const int64_t n_chunks = row_bytes<W>(m.cols) / 16;
        TilePlan p =
            plan_tiles(m.rows, n_chunks, rows_per_group % RW == 0 ? RW : 1, tile_unroll(T, RW), tile_unroll(T, 1));
        auto launch_variant = [&](auto rows, auto block) {
          launch("gpu matmul", matmul_tile_kernel<W, T, decltype(rows)::value, decltype(block)::value>, p.grid,
                 p.threads, 0, native(stream), m, x, ld_x, y, ld_y, n_tokens, rows_per_group, x_group_stride);
        };
        using Wide = std::integral_constant<int, RW>;
        using One = std::integral_constant<int, 1>;
        using Yes = std::true_type;
        using No = std::false_type;
        if (p.wide) p.block ? launch_variant(Wide{}, Yes{}) : launch_variant(Wide{}, No{});
        else p.block ? launch_variant(One{}, Yes{}) : launch_variant(One{}, No{});
      });
    }
  });
  return true;
}

}  // namespace

void matmul(const cpu::MatRef& w, const float* x, int64_t ld_x, float* y, int64_t ld_y, int64_t n_tokens, Stream stream,
            const GemmPolicy& policy) {
  if (n_tokens <= 0 || w.rows == 0) return;
  const WeightCode code = weight_code(w, "gpu matmul");
  const DeviceMat m = device_mat(w);
  if (policy.library(n_tokens) &&
      matmul_library(m, code, x, ld_x, 0, m.rows, y, ld_y, n_tokens, policy.split, policy.weight_cache, stream))
    return;
  if (policy.matrix(n_tokens) && matmul_mma(m, code, x, ld_x, 0, m.rows, y, ld_y, n_tokens, policy.split, stream))
    return;
  if (matmul_tiles(m, code, x, ld_x, 0, m.rows, y, ld_y, n_tokens, policy.gemv_stages, stream)) return;
  const bool x_vec = reinterpret_cast<uintptr_t>(x) % 16 == 0 && (n_tokens == 1 || ld_x % 4 == 0);
  const unsigned grid = blocks_for(w.rows, kBlock / MP_MIN_WARP_SIZE);
  with_weight_code(code, [&](auto wc) {
    with_token_tile(n_tokens, [&](auto tile) {
      launch("gpu matmul", matmul_kernel<decltype(wc)::value, decltype(tile)::value>, grid, kBlock, 0, native(stream),
             m, x, ld_x, y, ld_y, n_tokens, x_vec);
    });
  });
}

bool normed_input_applies(const cpu::MatRef& w, const float* x, const float* gain, const GemmPolicy& policy) {
  if (w.rows == 0 || policy.library(1) || policy.matrix(1)) return false;
  return reinterpret_cast<uintptr_t>(gain) % 16 == 0 &&
         single_token_applies(device_mat(w), weight_code(w, "gpu matmul_normed_input"), x);
}

void matmul_normed_input(const cpu::MatRef& w, const float* x, const float* gain, float eps, float* y, Stream stream,
                         const GemmPolicy& policy) {
  if (!normed_input_applies(w, x, gain, policy))
    throw GpuError("gpu matmul_normed_input: a " + std::to_string(w.rows) + "x" + std::to_string(w.cols) +
                   " product the single-token kernel does not take");
  (void)matmul_gemv(device_mat(w), weight_code(w, "gpu matmul_normed_input"), x, 0, w.rows, y, policy.gemv_stages,
                    stream, GemvInputNorm{true, gain, eps});
}

void matmul_grouped(const cpu::MatRef& w, const float* x, int64_t ld_x, int64_t x_group_stride, int64_t rows_per_group,
                    int64_t groups, float* y, int64_t ld_y, int64_t n_tokens, Stream stream, const GemmPolicy& policy) {
  if (n_tokens <= 0 || groups <= 0 || rows_per_group <= 0) return;
  if (rows_per_group * groups != w.rows)
    throw GpuError("gpu matmul_grouped: " + std::to_string(groups) + " groups of " + std::to_string(rows_per_group) +
                   " rows, expected " + std::to_string(w.rows) + " rows in all");
  const WeightCode code = weight_code(w, "gpu matmul_grouped");
  if (policy.library(n_tokens) && matmul_library(device_mat(w), code, x, ld_x, x_group_stride, rows_per_group, y, ld_y,
                                                 n_tokens, policy.split, policy.weight_cache, stream))
    return;
  if (policy.matrix(n_tokens) &&
      matmul_mma(device_mat(w), code, x, ld_x, x_group_stride, rows_per_group, y, ld_y, n_tokens, policy.split, stream))
    return;
  if (matmul_tiles(device_mat(w), code, x, ld_x, x_group_stride, rows_per_group, y, ld_y, n_tokens, policy.gemv_stages,
                   stream))
    return;
  for (int64_t g = 0; g < groups; ++g)
    matmul(w.row_band(g * rows_per_group, rows_per_group), x + g * x_group_stride, ld_x, y + g * rows_per_group, ld_y,
           n_tokens, stream, policy);
}

void rms_norm(const float* x, int64_t rows, int64_t n, int64_t ld, const float* weight, float eps, float* out,
              Stream stream) {
  if (rows <= 0) return;
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = aligned(x) && aligned(out) && ld % 4 == 0 && n % 4 == 0 && (!weight || aligned(weight));
  const int64_t per_thread = 4 * (vec ? 4 : 1);  // elements a thread reads at least
  int threads = 64;
  while (threads < kMaxNormThreads && int64_t(threads) * per_thread < n) threads *= 2;
  launch("gpu rms_norm", rms_norm_kernel, unsigned(rows), unsigned(threads), 0, native(stream), x, n, ld, weight, eps,
         out, vec);
}

void rope_rotate(float* x, int64_t S, int64_t heads, int64_t ld_token, int64_t ld_head, int64_t col0, int32_t rope_dim,
                 const float* cos, const float* sin, int64_t pos0, int64_t pos_step, bool inverse, Stream stream) {
  const int32_t half = rope_dim / 2;
  const int64_t n = S * heads * half;
  if (n <= 0) return;
  launch("gpu rope_rotate", rope_kernel, blocks_for(n), kBlock, 0, native(stream), x, S, heads, ld_token, ld_head, col0,
         half, cos, sin, pos0, pos_step, inverse);
}

void matmul_swiglu(const cpu::MatRef& w1, const cpu::MatRef& w3, const float* x, int64_t ld_x, int64_t n_tokens,
                   float limit, float* h1, float* h3, Stream stream, const GemmPolicy& policy) {
  if (n_tokens <= 0) return;
  if (w1.rows != w3.rows || w1.cols != w3.cols || w1.dtype != w3.dtype)
    throw GpuError("gpu matmul_swiglu: w1 " + std::to_string(w1.rows) + "x" + std::to_string(w1.cols) + " and w3 " +
                   std::to_string(w3.rows) + "x" + std::to_string(w3.cols) + " must share shape and encoding");
  const WeightCode code = weight_code(w1, "gpu matmul_swiglu w1");
  (void)weight_code(w3, "gpu matmul_swiglu w3");
  const DeviceMat m1 = device_mat(w1), m3 = device_mat(w3);
  // On the library, w1 and w3 as two products and the SwiGLU after them (the unfused path below).
  const bool library = policy.library(n_tokens) && library_gemm_applies(m1, code, x, ld_x, 0, stream) &&
                       library_gemm_applies(m3, code, x, ld_x, 0, stream);
  if (!library && policy.matrix(n_tokens) &&
      matmul_swiglu_mma(m1, m3, code, x, ld_x, n_tokens, limit, h1, policy.split, stream))
    return;
  const GemvShape shape = gemv_shape(code, row_bytes_of(code, m1.cols) / 16);
  const bool fused =
      n_tokens == 1 && shape.slices > 0 && tiles_apply(m1, code, x, ld_x, 1) && tiles_apply(m3, code, x, ld_x, 1);
  if (!fused) {
    matmul(w1, x, ld_x, h1, w1.rows, n_tokens, stream, policy);
    matmul(w3, x, ld_x, h3, w3.rows, n_tokens, stream, policy);
    swiglu_clamped(h1, h3, n_tokens * w1.rows, limit, h1, stream);
    return;
  }
  const int64_t per_block = gemv_rows_per_block(m1.rows, 2, shape.slices);
  const unsigned grid = unsigned((m1.rows + per_block - 1) / per_block);
  with_gemv_stages(policy.gemv_stages, [&](auto st) {
    constexpr int S = decltype(st)::value;
    with_gemv_kernel(code, shape, [&](auto wc, auto c) {
      constexpr int CPT = decltype(c)::value;
      constexpr WeightCode W = decltype(wc)::value;
      constexpr int R = gemv_ring_steps(W, S, CPT, 2);
      const auto kernel = swiglu_gemv_kernel<W, CPT, R>;
      const unsigned threads = unsigned(shape.slices * kGemvLanes);
      const size_t ring = gemv_ring_bytes(R, CPT, 2, int(threads));
      allow_dynamic_shared(reinterpret_cast<const void*>(kernel), ring);
      launch("gpu matmul_swiglu (single token)", kernel, grid, threads, ring, native(stream), m1, m3, x, limit, h1,
             per_block);
    });
  });
}

void swiglu_clamped(const float* gate, const float* up, int64_t n, float limit, float* out, Stream stream) {
  if (n <= 0) return;
  launch("gpu swiglu_clamped", swiglu_kernel, blocks_for(n), kBlock, 0, native(stream), gate, up, n, limit, out);
}

void embed(const cpu::MatRef& table, const int32_t* tokens, int64_t S, int64_t copies, float* X, Stream stream) {
  if (S <= 0) return;
  const WeightCode code = weight_code(table, "gpu embed table");
  const DeviceMat m = device_mat(table);
  const dim3 grid(blocks_for(table.cols), unsigned(S));
  with_weight_code(code, [&](auto wc) {
    launch("gpu embed", embed_kernel<decltype(wc)::value>, grid, kBlock, 0, native(stream), m, tokens, copies, X);
  });
}

void stream_mean(const float* streams, int32_t n, int64_t d_model, float* mean, Stream stream) {
  if (d_model <= 0) return;
  launch("gpu stream_mean", stream_mean_kernel, blocks_for(d_model), kBlock, 0, native(stream), streams, n, d_model,
         mean);
}

}  // namespace moepage::ds4::gpu
