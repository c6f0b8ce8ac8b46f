// The single-token expert products on the matrix cores (moe_mma.hpp, mma_gemv.hpp): grid (row
// blocks, experts of the launch), each block 8 rows of an expert's w1 and w3 (SwiGLU'd) or 16 rows
// of its w2, against the expert's one token.
#include <type_traits>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/mma_gemv.hpp"
#include "deepseek4/hip/moe_mma.hpp"
#include "deepseek4/hip/swiglu.hpp"

namespace moepage::ds4::gpu {
namespace {

#if defined(MOEPAGE_GPU_NVIDIA)
// Two blocks per multiprocessor: a block's loads are what keeps bytes in flight.
template <WeightCode W, bool Split>
__global__ void __launch_bounds__(kMmaThreads, 2)
    expert_up_mma_single_kernel(const std::byte* const* table_row, PartArgs w1, PartArgs w3, int64_t D, int64_t I,
                                Band band, const float* yn, float limit, float* act) {
  kernel_entry();
  const int32_t b = int32_t(blockIdx.y), pair = band.starts()[b];  // the expert's only (token, j) pair
  const std::byte* slot = table_row[band.experts()[b]];
  const DeviceMat m1 = part_mat(slot, w1, I, D), m3 = part_mat(slot, w3, I, D);
  float* out = act + int64_t(band.pairs()[pair]) * I;
  mma_gemv_block<W, true, Split>(m1, m3, int64_t(blockIdx.x) * (kGemvMmaRows / 2), I, D,
                                 yn + int64_t(band.tokens()[pair]) * D,
                                 [&](int64_t r, float g, float u) { out[r] = swiglu_value(g, u, limit); });
}

template <WeightCode W, bool Split>
__global__ void __launch_bounds__(kMmaThreads, 2)
    expert_down_mma_single_kernel(const std::byte* const* table_row, PartArgs w2, int64_t D, int64_t I, Band band,
                                  const float* act, float* ex_out) {
  kernel_entry();
  const int32_t b = int32_t(blockIdx.y), pair = band.starts()[b];
  const std::byte* slot = table_row[band.experts()[b]];
  const DeviceMat m2 = part_mat(slot, w2, D, I);
  const int64_t dest = band.pairs()[pair];
  float* out = ex_out + dest * D;
  mma_gemv_block<W, false, Split>(m2, m2, int64_t(blockIdx.x) * kGemvMmaRows, D, I, act + dest * I,
                                  [&](int64_t r, float v) { out[r] = v; });
}
#endif

}  // namespace

void launch_expert_mma_single(const std::byte* const* table_row, WeightCode up_code, WeightCode down_code,
                              const PartArgs& w1, const PartArgs& w3, const PartArgs& w2, int64_t D, int64_t I,
                              const Band& band, int32_t count, const float* yn, float limit, float* act, float* ex_out,
                              bool split, Stream stream) {
#if defined(MOEPAGE_GPU_NVIDIA)
  auto launch_variant = [&](auto split_part) {
    constexpr bool Split = decltype(split_part)::value;
    const dim3 up_grid(unsigned((I + kGemvMmaRows / 2 - 1) / (kGemvMmaRows / 2)), unsigned(count));
    const dim3 down_grid(unsigned((D + kGemvMmaRows - 1) / kGemvMmaRows), unsigned(count));
    with_weight_code(up_code, [&](auto wc) {
      constexpr WeightCode W = decltype(wc)::value;
      if constexpr (mma_encoding(W))
        launch("gpu moe expert w1/w3 (single token, matrix cores)", expert_up_mma_single_kernel<W, Split>, up_grid,
               kMmaThreads, 0, native(stream), table_row, w1, w3, D, I, band, yn, limit, act);
    });
    with_weight_code(down_code, [&](auto wc) {
      constexpr WeightCode W = decltype(wc)::value;
      if constexpr (mma_encoding(W))
        launch("gpu moe expert w2 (single token, matrix cores)", expert_down_mma_single_kernel<W, Split>, down_grid,
               kMmaThreads, 0, native(stream), table_row, w2, D, I, band, act, ex_out);
    });
  };
  split ? launch_variant(std::true_type{}) : launch_variant(std::false_type{});
#else
  (void)table_row, (void)up_code, (void)down_code, (void)w1, (void)w3, (void)w2, (void)D, (void)I, (void)band;
  (void)count, (void)yn, (void)limit, (void)act, (void)ex_out, (void)split, (void)stream;
  throw GpuError("gpu moe: the matrix-core path is not built for this GPU");
#endif
}

}  // namespace moepage::ds4::gpu
