// The routed experts' kernels of one band (moe_experts.hpp): per expert of the band's group record
// (grid.y), the w1/w3 product with its SwiGLU, then the w2 product, in the variant the layer's plan
// picked: the single-token products (row_gemv.hpp), the tiled ones (row_dot.hpp), or the matrix
// cores (moe_mma.hip).
#include "deepseek4/hip/moe_experts.hpp"

#include <algorithm>
#include <type_traits>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/dynamic_shared.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/moe_scratch.hpp"
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

// act[pair, r] = swiglu(w1[r] . yn[token], w3[r] . yn[token]) for every pair of expert blockIdx.y
// of the band: each warp streams rows r of w1 and w3 once per token tile.
template <WeightCode W, int T>
__global__ void expert_up_kernel(const std::byte* const* table_row, PartArgs w1, PartArgs w3, int64_t D, int64_t I,
                                 Band band, const float* yn, bool x_vec, float limit, float* act) {
  kernel_entry();
  const int32_t b = blockIdx.y;
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const std::byte* slot = table_row[band.experts()[b]];
  const DeviceMat m1 = part_mat(slot, w1, I, D), m3 = part_mat(slot, w3, I, D);
  const int32_t begin = band.starts()[b], end = band.starts()[b + 1];
  const int64_t warps = blockDim.x / MP_WARP_SIZE;
  const bool lane0 = threadIdx.x % MP_WARP_SIZE == 0;
  for (int64_t r = blockIdx.x * warps + threadIdx.x / MP_WARP_SIZE; r < I; r += int64_t(gridDim.x) * warps) {
    for (int32_t p0 = begin; p0 < end; p0 += T) {
      const int32_t nt = end - p0 < T ? end - p0 : T;
      const float* xs[T];
#pragma unroll
      for (int t = 0; t < T; ++t) xs[t] = yn + int64_t(band.tokens()[p0 + (t < nt ? t : 0)]) * D;
      float g[T], u[T];
      warp_row_dot<W, T>(m1, r, xs, x_vec, g);
      warp_row_dot<W, T>(m3, r, xs, x_vec, u);
      if (lane0) {
#pragma unroll
        for (int t = 0; t < T; ++t)
          if (t < nt) act[int64_t(band.pairs()[p0 + t]) * I + r] = swiglu_value(g[t], u[t], limit);
      }
    }
  }
}

// ex_out[pair, r] = w2[r] . act[pair] for every pair of expert blockIdx.y of the band.
template <WeightCode W, int T>
__global__ void expert_down_kernel(const std::byte* const* table_row, PartArgs w2, int64_t D, int64_t I, Band band,
                                   const float* act, bool x_vec, float* ex_out) {
  kernel_entry();
  const int32_t b = blockIdx.y;
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const std::byte* slot = table_row[band.experts()[b]];
  const DeviceMat m2 = part_mat(slot, w2, D, I);
  const int32_t begin = band.starts()[b], end = band.starts()[b + 1];
  const int64_t warps = blockDim.x / MP_WARP_SIZE;
  const bool lane0 = threadIdx.x % MP_WARP_SIZE == 0;
  for (int64_t r = blockIdx.x * warps + threadIdx.x / MP_WARP_SIZE; r < D; r += int64_t(gridDim.x) * warps) {
    for (int32_t p0 = begin; p0 < end; p0 += T) {
      const int32_t nt = end - p0 < T ? end - p0 : T;
      const float* xs[T];
#pragma unroll
      for (int t = 0; t < T; ++t) xs[t] = act + int64_t(band.pairs()[p0 + (t < nt ? t : 0)]) * I;
      float acc[T];
      warp_row_dot<W, T>(m2, r, xs, x_vec, acc);
      if (lane0) {
#pragma unroll
        for (int t = 0; t < T; ++t)
          if (t < nt) ex_out[int64_t(band.pairs()[p0 + t]) * D + r] = acc[t];
      }
    }
  }
}

// The aligned fast path of the expert products (row_dot.hpp). A tile is RR rows of w1 and the
// same RR rows of w3, so the SwiGLU of a row is formed where both dot products end.
template <WeightCode W, int T, int RR, bool Block>
__global__ void __launch_bounds__(kMaxTileThreads)
    expert_up_tile_kernel(const std::byte* const* table_row, PartArgs w1, PartArgs w3, int64_t D, int64_t I, Band band,
                          const float* yn, float limit, float* act) {
  kernel_entry();
  constexpr int R = 2 * RR;
  __shared__ float red[(Block ? kMaxTileThreads / MP_MIN_WARP_SIZE : 1) * R * T];
  constexpr int U = tile_unroll(T, R);
  const TileGroup<Block> g;
  const int32_t b = blockIdx.y;
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const std::byte* slot = table_row[band.experts()[b]];
  const DeviceMat m1 = part_mat(slot, w1, I, D), m3 = part_mat(slot, w3, I, D);
  const int32_t begin = band.starts()[b], end = band.starts()[b + 1];
  const int64_t rb = row_bytes<W>(D), n_chunks = rb / 16;
  const int64_t n_tiles = (I + RR - 1) / RR;
  for (int64_t tile = g.id; tile < n_tiles; tile += g.count) {
    const uint4* rd[R];
    const uint8_t* rs[R];
#pragma unroll
    for (int i = 0; i < RR; ++i) {
      const int64_t row = tile * RR + i < I ? tile * RR + i : I - 1;
      rd[i] = reinterpret_cast<const uint4*>(m1.data + row * rb);
      rd[RR + i] = reinterpret_cast<const uint4*>(m3.data + row * rb);
      rs[i] = has_block_scale<W>() ? m1.scale + scale_row_offset<W>(row, D) : nullptr;
      rs[RR + i] = has_block_scale<W>() ? m3.scale + scale_row_offset<W>(row, D) : nullptr;
    }
    for (int32_t p0 = begin; p0 < end; p0 += T) {
      const int32_t nt = end - p0 < T ? end - p0 : T;
      const float* xs[T];
#pragma unroll
      for (int t = 0; t < T; ++t) xs[t] = yn + int64_t(band.tokens()[p0 + (t < nt ? t : 0)]) * D;
      float acc[R * T];
      tile_dot<W, T, R, U>(rd, rs, n_chunks, xs, g.first, g.stride, acc);
      group_sum<R * T, Block>(acc, red);
#pragma unroll
      for (int i = 0; i < RR; ++i)
#pragma unroll
        for (int t = 0; t < T; ++t)
          if (g.first == i * T + t && tile * RR + i < I && t < nt)
            act[int64_t(band.pairs()[p0 + t]) * I + tile * RR + i] =
                swiglu_value(acc[i * T + t], acc[(RR + i) * T + t], limit);
    }
  }
}

template <WeightCode W, int T, int R, bool Block>
__global__ void __launch_bounds__(kMaxTileThreads)
    expert_down_tile_kernel(const std::byte* const* table_row, PartArgs w2, int64_t D, int64_t I, Band band,
                            const float* act, float* ex_out) {
  kernel_entry();
  __shared__ float red[(Block ? kMaxTileThreads / MP_MIN_WARP_SIZE : 1) * R * T];
  constexpr int U = tile_unroll(T, R);
  const TileGroup<Block> g;
  const int32_t b = blockIdx.y;
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const std::byte* slot = table_row[band.experts()[b]];
  const DeviceMat m2 = part_mat(slot, w2, D, I);
  const int32_t begin = band.starts()[b], end = band.starts()[b + 1];
  const int64_t rb = row_bytes<W>(I), n_chunks = rb / 16;
  const int64_t n_tiles = (D + R - 1) / R;
  for (int64_t tile = g.id; tile < n_tiles; tile += g.count) {
    const uint4* rd[R];
    const uint8_t* rs[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t row = tile * R + r < D ? tile * R + r : D - 1;
      rd[r] = reinterpret_cast<const uint4*>(m2.data + row * rb);
      rs[r] = has_block_scale<W>() ? m2.scale + scale_row_offset<W>(row, I) : nullptr;
    }
    for (int32_t p0 = begin; p0 < end; p0 += T) {
      const int32_t nt = end - p0 < T ? end - p0 : T;
      const float* xs[T];
#pragma unroll
      for (int t = 0; t < T; ++t) xs[t] = act + int64_t(band.pairs()[p0 + (t < nt ? t : 0)]) * I;
      float acc[R * T];
      tile_dot<W, T, R, U>(rd, rs, n_chunks, xs, g.first, g.stride, acc);
      group_sum<R * T, Block>(acc, red);
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int t = 0; t < T; ++t)
          if (g.first == r * T + t && tile * R + r < D && t < nt)
            ex_out[int64_t(band.pairs()[p0 + t]) * D + tile * R + r] = acc[r * T + t];
    }
  }
}

// The single-token expert products (row_gemv.hpp), for bands whose experts each serve one token
// (every decode step): block (x, b) finishes rows [x*rows_per_block, ...) of expert b's w1 and w3
// together, so SwiGLU is applied where both sums end. S: the steps of the ring of loads in flight
// (row_gemv_staged.hpp; 0: the register path).
template <WeightCode W, int CPT, int S>
__global__ void __launch_bounds__(kGemvMaxSlices* kGemvLanes)
    expert_up_gemv_kernel(const std::byte* const* table_row, PartArgs w1, PartArgs w3, int64_t D, int64_t I, Band band,
                          const float* yn, float limit, float* act, int64_t rows_per_block) {
  kernel_entry();
  __shared__ float partial[2 * kGemvMaxSlices * kGemvMaxRows];
  const int32_t b = blockIdx.y, pair = band.starts()[b];  // the expert's only (token, j) pair
  if (band.skips(b)) return;                              // a group the other launch of a slot lookup computes
  const std::byte* slot = table_row[band.experts()[b]];
  const DeviceMat mats[2] = {part_mat(slot, w1, I, D), part_mat(slot, w3, I, D)};
  int64_t r1;
  const int64_t r0 = gemv_block_rows(I, rows_per_block, r1);
  float xv[CPT][elems_per_chunk<W>()];
  gemv_load_x<W, CPT>(yn + int64_t(band.tokens()[pair]) * D, threadIdx.x, blockDim.x, xv);
  extern __shared__ uint4 gemv_ring[];
  gemv_rows_any<W, CPT, 2, S>(mats, r0, r1, xv, partial, gemv_ring);
  __syncthreads();
  float* out = act + int64_t(band.pairs()[pair]) * I + r0;
  for (int64_t i = threadIdx.x; i < r1 - r0; i += blockDim.x)
    out[i] = swiglu_value(gemv_total(partial, 0, i), gemv_total(partial, 1, i), limit);
}

template <WeightCode W, int CPT, int S>
__global__ void __launch_bounds__(kGemvMaxSlices* kGemvLanes)
    expert_down_gemv_kernel(const std::byte* const* table_row, PartArgs w2, int64_t D, int64_t I, Band band,
                            const float* act, float* ex_out, int64_t rows_per_block) {
  kernel_entry();
  __shared__ float partial[kGemvMaxSlices * kGemvMaxRows];
  const int32_t b = blockIdx.y, pair = band.starts()[b];
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const std::byte* slot = table_row[band.experts()[b]];
  const DeviceMat mats[1] = {part_mat(slot, w2, D, I)};
  int64_t r1;
  const int64_t r0 = gemv_block_rows(D, rows_per_block, r1);
  const int64_t dest = band.pairs()[pair];
  float xv[CPT][elems_per_chunk<W>()];
  gemv_load_x<W, CPT>(act + dest * I, threadIdx.x, blockDim.x, xv);
  extern __shared__ uint4 gemv_ring[];
  gemv_rows_any<W, CPT, 1, S>(mats, r0, r1, xv, partial, gemv_ring);
  __syncthreads();
  for (int64_t i = threadIdx.x; i < r1 - r0; i += blockDim.x) ex_out[dest * D + r0 + i] = gemv_total(partial, 0, i);
}

// Launches both single-token expert products for `nb` experts of the band (grid.y), planned for
// plan_nb experts (the layer's: every group gets the same plan), when their shapes apply; false
// otherwise (decided by the shapes alone, so the same for every group of a layer).
bool launch_expert_gemv(const std::byte* const* table_row, const ExpertLayout& layout, WeightCode up_code,
                        WeightCode down_code, int64_t D, int64_t I, const Band& band, int32_t nb, int32_t plan_nb,
                        const float* yn, float limit, float* act, float* ex_out, int stages, hipStream_t hip_stream) {
  const GemvShape up = gemv_shape(up_code, row_bytes_of(up_code, D) / 16);
  const GemvShape down = gemv_shape(down_code, row_bytes_of(down_code, I) / 16);
  if (up.slices == 0 || down.slices == 0) return false;
  const int64_t up_rows = gemv_rows_per_block(I, plan_nb, up.slices),
                down_rows = gemv_rows_per_block(D, plan_nb, down.slices);
  with_gemv_stages(stages, [&](auto st) {
    constexpr int S = decltype(st)::value;
    with_gemv_kernel(up_code, up, [&](auto wc, auto c) {
      constexpr int CPT = decltype(c)::value;
      constexpr WeightCode W = decltype(wc)::value;
      constexpr int R = gemv_ring_steps(W, S, CPT, 2);
      const auto kernel = expert_up_gemv_kernel<W, CPT, R>;
      const unsigned threads = unsigned(up.slices * kGemvLanes);
      const size_t ring = gemv_ring_bytes(R, CPT, 2, int(threads));
      allow_dynamic_shared(reinterpret_cast<const void*>(kernel), ring);
      launch("gpu moe expert w1/w3 (single token)", kernel, dim3(unsigned((I + up_rows - 1) / up_rows), unsigned(nb)),
             threads, ring, hip_stream, table_row, part_args(layout.w1), part_args(layout.w3), D, I, band, yn, limit,
             act, up_rows);
    });
    with_gemv_kernel(down_code, down, [&](auto wc, auto c) {
      constexpr int CPT = decltype(c)::value;
      constexpr WeightCode W = decltype(wc)::value;
      constexpr int R = gemv_ring_steps(W, S, CPT, 1);
      const auto kernel = expert_down_gemv_kernel<W, CPT, R>;
      const unsigned threads = unsigned(down.slices * kGemvLanes);
      const size_t ring = gemv_ring_bytes(R, CPT, 1, int(threads));
      allow_dynamic_shared(reinterpret_cast<const void*>(kernel), ring);
      launch("gpu moe expert w2 (single token)", kernel, dim3(unsigned((D + down_rows - 1) / down_rows), unsigned(nb)),
             threads, ring, hip_stream, table_row, part_args(layout.w2), D, I, band, act, ex_out, down_rows);
    });
  });
  return true;
}

// Rows of w1 (and of w3) per wide up tile, and rows of w2 per wide down tile, for T tokens.
constexpr int up_wide_rows(int T) { return T <= 2 ? 2 : 1; }
constexpr int down_wide_rows(int T) { return T == 1 ? 4 : T <= 4 ? 2 : 1; }

}  // namespace

PartArgs part_args(const ExpertPart& p) { return PartArgs{p.offset, p.scale_offset, p.has_scale}; }

unsigned long long* scale_fault_word(RouterFault* f) {
  return f ? reinterpret_cast<unsigned long long*>(reinterpret_cast<std::byte*>(f) + offsetof(RouterFault, scale))
           : nullptr;
}

void plan_expert_launch(ExpertLaunch& x, const GemmPolicy& gemm, bool slots_aligned) {
  const ExpertLayout& layout = *x.layout;
  x.up_vec = reinterpret_cast<uintptr_t>(x.yn) % 16 == 0 && x.D % 4 == 0;
  x.down_vec = reinterpret_cast<uintptr_t>(x.act) % 16 == 0 && x.I % 4 == 0;
  x.up_tiles = slots_aligned && x.up_vec && x.up_code != WeightCode::F16 && layout.w1.offset % 16 == 0 &&
               layout.w3.offset % 16 == 0 && row_bytes_of(x.up_code, x.D) % 16 == 0;
  x.down_tiles = slots_aligned && x.down_vec && x.down_code != WeightCode::F16 && layout.w2.offset % 16 == 0 &&
                 row_bytes_of(x.down_code, x.I) % 16 == 0;
  const bool mma_ok = expert_mma_applies(x.up_code, x.down_code, x.D, x.I, part_args(layout.w1), part_args(layout.w3),
                                         part_args(layout.w2), slots_aligned);
  x.matrix = gemm.expert_matrix(x.max_count) && mma_ok;
  x.matrix_single = x.max_count == 1 && gemm.single_token && mma_ok;
  x.gemv_stages = gemm.gemv_stages;
}

void launch_expert_group(const ExpertLaunch& x, int32_t first, int32_t count) {
  const ExpertLayout& layout = *x.layout;
  const std::byte* const* table_row = x.table_row;
  const WeightCode up_code = x.up_code, down_code = x.down_code;
  const int64_t D = x.D, I = x.I;
  const int32_t max_count = x.max_count, n_used = x.n_used;
  const float* yn = x.yn;
  const float limit = x.limit;
  const Stream stream = x.stream;
  hipStream_t st = native(stream);
  const Band bd{x.groups, x.nb, x.np, first, x.range};
  if (x.matrix && x.x16) {
    launch_expert_stream(table_row, part_args(layout.w1), part_args(layout.w3), part_args(layout.w2), D, I, bd, count,
                         max_count, x.token_tile, x.x16, limit, reinterpret_cast<uint16_t*>(x.act), x.ex_out, x.fault,
                         stream);
    return;
  }
  if (x.matrix) {
    launch_expert_mma(table_row, up_code, down_code, part_args(layout.w1), part_args(layout.w3), part_args(layout.w2),
                      D, I, bd, count, max_count, x.token_tile, yn, limit, x.act, x.ex_out, x.precision, x.fault,
                      stream);
    return;
  }
  if (x.matrix_single) {
    launch_expert_mma_single(table_row, up_code, down_code, part_args(layout.w1), part_args(layout.w3),
                             part_args(layout.w2), D, I, bd, count, yn, limit, x.act, x.ex_out, x.precision, x.fault,
                             stream);
    return;
  }
  if (max_count == 1 && x.up_tiles && x.down_tiles &&
      launch_expert_gemv(table_row, layout, up_code, down_code, D, I, bd, count, n_used, yn, limit, x.act, x.ex_out,
                         x.gemv_stages, st))
    return;
  const dim3 up_grid(blocks_for(I, kBlock / MP_MIN_WARP_SIZE));
  const dim3 down_grid(blocks_for(D, kBlock / MP_MIN_WARP_SIZE));
  const bool up_tiles = x.up_tiles, down_tiles = x.down_tiles, up_vec = x.up_vec, down_vec = x.down_vec;
  float* act = x.act;
  float* ex_out = x.ex_out;
  with_token_tile(max_count, [&](auto tile) {
    constexpr int T = decltype(tile)::value;
    using Yes = std::true_type;
    using No = std::false_type;
    if (up_tiles) {
      with_weight_code(up_code, [&](auto wc) {
        constexpr WeightCode W = decltype(wc)::value;
        if constexpr (W != WeightCode::F16) {
          constexpr int RW = up_wide_rows(T);
          const TilePlan p =
              plan_tiles(I, row_bytes_of(W, D) / 16, RW, tile_unroll(T, 2 * RW), tile_unroll(T, 2), n_used);
          auto launch_variant = [&](auto rows, auto block) {
            launch("gpu moe expert w1/w3", expert_up_tile_kernel<W, T, decltype(rows)::value, decltype(block)::value>,
                   dim3(p.grid, unsigned(count)), p.threads, 0, st, table_row, part_args(layout.w1),
                   part_args(layout.w3), D, I, bd, yn, limit, act);
          };
          using Wide = std::integral_constant<int, RW>;
          using One = std::integral_constant<int, 1>;
          if (p.wide) p.block ? launch_variant(Wide{}, Yes{}) : launch_variant(Wide{}, No{});
          else p.block ? launch_variant(One{}, Yes{}) : launch_variant(One{}, No{});
        }
      });
    } else {
      with_weight_code(up_code, [&](auto wc) {
        launch("gpu moe expert w1/w3", expert_up_kernel<decltype(wc)::value, T>, dim3(up_grid.x, unsigned(count)),
               kBlock, 0, st, table_row, part_args(layout.w1), part_args(layout.w3), D, I, bd, yn, up_vec, limit, act);
      });
    }
    if (down_tiles) {
      with_weight_code(down_code, [&](auto wc) {
        constexpr WeightCode W = decltype(wc)::value;
        if constexpr (W != WeightCode::F16) {
          constexpr int RW = down_wide_rows(T);
          const TilePlan p = plan_tiles(D, row_bytes_of(W, I) / 16, RW, tile_unroll(T, RW), tile_unroll(T, 1), n_used);
          auto launch_variant = [&](auto rows, auto block) {
            launch("gpu moe expert w2", expert_down_tile_kernel<W, T, decltype(rows)::value, decltype(block)::value>,
                   dim3(p.grid, unsigned(count)), p.threads, 0, st, table_row, part_args(layout.w2), D, I, bd, act,
                   ex_out);
          };
          using Wide = std::integral_constant<int, RW>;
          using One = std::integral_constant<int, 1>;
          if (p.wide) p.block ? launch_variant(Wide{}, Yes{}) : launch_variant(Wide{}, No{});
          else p.block ? launch_variant(One{}, Yes{}) : launch_variant(One{}, No{});
        }
      });
    } else {
      with_weight_code(down_code, [&](auto wc) {
        launch("gpu moe expert w2", expert_down_kernel<decltype(wc)::value, T>, dim3(down_grid.x, unsigned(count)),
               kBlock, 0, st, table_row, part_args(layout.w2), D, I, bd, act, down_vec, ex_out);
      });
    }
  });
}

}  // namespace moepage::ds4::gpu
