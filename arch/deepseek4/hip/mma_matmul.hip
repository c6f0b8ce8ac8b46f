// The dense weight products on the matrix cores (mma_matmul.hpp): a grid of 128-row by 64-token
// tiles (mma_tile_staged.hpp), one block each.
#include "deepseek4/hip/mma_matmul.hpp"

#include <type_traits>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/gemm_policy.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/mma_tile_staged.hpp"
#include "deepseek4/hip/swiglu.hpp"

namespace moepage::ds4::gpu {
namespace {

#if defined(MOEPAGE_GPU_NVIDIA)
// Block (x, y): rows [128x, 128x + 128) by tokens [BN y, BN y + BN); a block's rows lie in one group.
template <WeightCode W, bool Split, int BN>
__global__ void __launch_bounds__(kMmaThreads)
    mma_matmul_kernel(DeviceMat m, const float* x, int64_t ld_x, int64_t x_group_stride, int64_t rows_per_group,
                      float* y, int64_t ld_y, int64_t n_tokens) {
  kernel_entry();
  const int64_t row0 = int64_t(blockIdx.x) * kMmaStagedRows, t0 = int64_t(blockIdx.y) * BN;
  const float* xg = x + (row0 / rows_per_group) * x_group_stride + t0 * ld_x;
  const int n = int(n_tokens - t0 < BN ? n_tokens - t0 : BN);
  float* yt = y + t0 * ld_y;
  mma_staged_block<W, false, Split, BN>(
      m, m, row0, m.rows, m.cols, [&](int t) { return xg + int64_t(t) * ld_x; }, n,
      [&](int64_t r, int t, float v) { yt[int64_t(t) * ld_y + r] = v; });
}

// Block (x, y): rows [64x, 64x + 64) of w1 and w3 by tokens [64y, 64y + 64), SwiGLU'd.
template <WeightCode W, bool Split>
__global__ void __launch_bounds__(kMmaThreads)
    mma_swiglu_kernel(DeviceMat w1, DeviceMat w3, const float* x, int64_t ld_x, int64_t n_tokens, float limit,
                      float* out) {
  kernel_entry();
  const int64_t row0 = int64_t(blockIdx.x) * (kMmaStagedRows / 2), t0 = int64_t(blockIdx.y) * kMmaTokens;
  const float* xt = x + t0 * ld_x;
  const int n = int(n_tokens - t0 < kMmaTokens ? n_tokens - t0 : kMmaTokens);
  float* ot = out + t0 * w1.rows;
  mma_staged_block<W, true, Split, kMmaTokens>(
      w1, w3, row0, w1.rows, w1.cols, [&](int t) { return xt + int64_t(t) * ld_x; }, n,
      [&](int64_t r, int t, float g, float u) { ot[int64_t(t) * w1.rows + r] = swiglu_value(g, u, limit); });
}
#endif

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

#if defined(MOEPAGE_GPU_NVIDIA)
// The token tile of a dense product: 64 tokens, or 32 where 64-token tiles would leave more than
// half the multiprocessors without a block. On the H200 (132 of them) a 1,024-token prompt's router
// (256 rows: 32 blocks) then took 55 us instead of 63 and wkv (512 rows: 64 blocks) 65 instead of
// 77, but wq_a (1,024 rows: 128 blocks) 92 instead of 77, hence the bound.
int32_t dense_token_tile(int64_t rows, int64_t n_tokens) {
  const int64_t row_tiles = (rows + kMmaStagedRows - 1) / kMmaStagedRows;
  const int64_t blocks = row_tiles * ((n_tokens + kMmaTokens - 1) / kMmaTokens);
  return 2 * blocks <= int64_t(device_sm_count()) ? kMmaFewTokens : kMmaTokens;
}
#endif

unsigned token_tiles(int64_t n_tokens) { return unsigned((n_tokens + kMmaTokens - 1) / kMmaTokens); }

}  // namespace

bool matrix_cores_available() {
  static const bool ok = [] {
    if (!kMmaAvailable) return false;
    int device = 0;
    MP_GPU_CHECK(hipGetDevice(&device));
    hipDeviceProp_t prop;
    MP_GPU_CHECK(hipGetDeviceProperties(&prop, device));
    return prop.major >= 8;
  }();
  return ok;
}

bool matmul_mma(const DeviceMat& m, WeightCode code, const float* x, int64_t ld_x, int64_t x_group_stride,
                int64_t rows_per_group, float* y, int64_t ld_y, int64_t n_tokens, bool split, Stream stream) {
  if (!mma_encoding(code) || !mma_shape_ok(m.cols) || !aligned16(x) || ld_x % 4 != 0 || x_group_stride % 4 != 0 ||
      !aligned16(m.data) || !matrix_cores_available())
    return false;
  if (rows_per_group < m.rows && rows_per_group % kMmaStagedRows != 0)
    return false;  // a tile would straddle two groups
#if defined(MOEPAGE_GPU_NVIDIA)
  const int32_t tile = dense_token_tile(m.rows, n_tokens);
  const dim3 grid(unsigned((m.rows + kMmaStagedRows - 1) / kMmaStagedRows), unsigned((n_tokens + tile - 1) / tile));
  with_weight_code(code, [&](auto wc) {
    constexpr WeightCode W = decltype(wc)::value;
    if constexpr (mma_encoding(W)) {
      auto run = [&](auto split_part, auto bn) {
        constexpr bool Split = decltype(split_part)::value;
        constexpr int BN = decltype(bn)::value;
        launch("gpu matmul (matrix cores)", mma_matmul_kernel<W, Split, BN>, grid, kMmaThreads, 0, native(stream), m, x,
               ld_x, x_group_stride, rows_per_group, y, ld_y, n_tokens);
      };
      using Few = std::integral_constant<int, kMmaFewTokens>;
      using Many = std::integral_constant<int, kMmaTokens>;
      if (split) tile == kMmaFewTokens ? run(std::true_type{}, Few{}) : run(std::true_type{}, Many{});
      else tile == kMmaFewTokens ? run(std::false_type{}, Few{}) : run(std::false_type{}, Many{});
    }
  });
  return true;
#else
  (void)y, (void)ld_y, (void)n_tokens, (void)split, (void)stream;
  return false;
#endif
}

bool matmul_swiglu_mma(const DeviceMat& w1, const DeviceMat& w3, WeightCode code, const float* x, int64_t ld_x,
                       int64_t n_tokens, float limit, float* out, bool split, Stream stream) {
  if (!mma_encoding(code) || !mma_shape_ok(w1.cols) || w1.rows != w3.rows || w1.cols != w3.cols || !aligned16(x) ||
      ld_x % 4 != 0 || !aligned16(w1.data) || !aligned16(w3.data) || !matrix_cores_available())
    return false;
#if defined(MOEPAGE_GPU_NVIDIA)
  const dim3 grid(unsigned((w1.rows + kMmaStagedRows / 2 - 1) / (kMmaStagedRows / 2)), token_tiles(n_tokens));
  with_weight_code(code, [&](auto wc) {
    constexpr WeightCode W = decltype(wc)::value;
    if constexpr (mma_encoding(W)) {
      if (split)
        launch("gpu matmul_swiglu (matrix cores)", mma_swiglu_kernel<W, true>, grid, kMmaThreads, 0, native(stream), w1,
               w3, x, ld_x, n_tokens, limit, out);
      else
        launch("gpu matmul_swiglu (matrix cores)", mma_swiglu_kernel<W, false>, grid, kMmaThreads, 0, native(stream),
               w1, w3, x, ld_x, n_tokens, limit, out);
    }
  });
  return true;
#else
  (void)limit, (void)out, (void)n_tokens, (void)split, (void)stream;
  return false;
#endif
}

}  // namespace moepage::ds4::gpu
