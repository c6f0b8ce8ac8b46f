// matmul_many: each matrix's rows fall to their own run of blocks, and a block computes its rows
// exactly as matmul_gemv_kernel would (row_gemv.hpp), so a row's sum does not depend on the
// launch it came from.
#include "deepseek4/hip/gemv_many.hpp"

#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/dynamic_shared.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/row_dot.hpp"
#include "deepseek4/hip/row_gemv.hpp"
#include "deepseek4/hip/row_gemv_staged.hpp"

namespace moepage::ds4::gpu {
namespace {

struct ManyTargets {
  DeviceMat m[kMaxManyProducts];
  float* y[kMaxManyProducts];
  int64_t first_block[kMaxManyProducts];  // the first block of each product's run
  int32_t count;
};

template <WeightCode W, int CPT, int S>
__global__ void __launch_bounds__(kGemvMaxSlices* kGemvLanes)
    matmul_many_gemv_kernel(ManyTargets t, const float* x, int64_t rows_per_block) {
  kernel_entry();
  __shared__ float partial[kGemvMaxSlices * kGemvMaxRows];
  // This block's product, chosen without indexing the parameters by a variable (which would copy
  // them to local memory).
  DeviceMat m = t.m[0];
  float* y = t.y[0];
  int64_t first = 0;
#pragma unroll
  for (int i = 1; i < int(kMaxManyProducts); ++i)
    if (i < t.count && int64_t(blockIdx.x) >= t.first_block[i]) {
      m = t.m[i];
      y = t.y[i];
      first = t.first_block[i];
    }
  const int64_t r0 = (int64_t(blockIdx.x) - first) * rows_per_block;
  const int64_t r1 = r0 + rows_per_block < m.rows ? r0 + rows_per_block : m.rows;
  float xv[CPT][elems_per_chunk<W>()];
  gemv_load_x<W, CPT>(x, threadIdx.x, blockDim.x, xv);
  const DeviceMat mats[1] = {m};
  extern __shared__ uint4 gemv_ring[];
  gemv_rows_any<W, CPT, 1, S>(mats, r0, r1, xv, partial, gemv_ring);
  __syncthreads();
  for (int64_t i = threadIdx.x; i < r1 - r0; i += blockDim.x) y[r0 + i] = gemv_total(partial, 0, i);
}

}  // namespace

bool matmul_many_applies(std::span<const MatProduct> products, const float* x, const GemmPolicy& policy) {
  if (products.empty() || products.size() > kMaxManyProducts || policy.library(1) || policy.matrix(1)) return false;
  const cpu::MatRef& first = products.front().w;
  for (const MatProduct& p : products) {
    if (p.w.rows == 0 || !p.y || p.w.dtype != first.dtype || p.w.cols != first.cols) return false;
    if (!single_token_applies(device_mat(p.w), weight_code(p.w, "gpu matmul_many"), x)) return false;
  }
  return true;
}

void matmul_many(std::span<const MatProduct> products, const float* x, Stream stream, const GemmPolicy& policy) {
  if (!matmul_many_applies(products, x, policy))
    throw GpuError("gpu matmul_many: " + std::to_string(products.size()) +
                   " products the single-token kernel does not take together (expected 1.." +
                   std::to_string(kMaxManyProducts) + " matrices of one encoding and width)");
  const WeightCode code = weight_code(products.front().w, "gpu matmul_many");
  const GemvShape shape = gemv_shape(code, row_bytes_of(code, products.front().w.cols) / 16);
  int64_t rows = 0;
  for (const MatProduct& p : products) rows += p.w.rows;
  const int64_t per_block = gemv_rows_per_block(rows, 1, shape.slices);
  ManyTargets t{};
  t.count = int32_t(products.size());
  int64_t blocks = 0;
  for (size_t i = 0; i < products.size(); ++i) {
    t.m[i] = device_mat(products[i].w);
    t.y[i] = products[i].y;
    t.first_block[i] = blocks;
    blocks += (products[i].w.rows + per_block - 1) / per_block;
  }
  with_gemv_stages(policy.gemv_stages, [&](auto st) {
    constexpr int S = decltype(st)::value;
    with_gemv_kernel(code, shape, [&](auto wc, auto c) {
      constexpr int CPT = decltype(c)::value;
      constexpr WeightCode W = decltype(wc)::value;
      constexpr int R = gemv_ring_steps(W, S, CPT, 1);
      const auto kernel = matmul_many_gemv_kernel<W, CPT, R>;
      const unsigned threads = unsigned(shape.slices * kGemvLanes);
      const size_t ring = gemv_ring_bytes(R, CPT, 1, int(threads));
      allow_dynamic_shared(reinterpret_cast<const void*>(kernel), ring);
      launch("gpu matmul_many (single token)", kernel, unsigned(blocks), threads, ring, native(stream), t, x,
             per_block);
    });
  });
}

}  // namespace moepage::ds4::gpu
