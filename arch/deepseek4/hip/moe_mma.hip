// The routed experts on the matrix cores (moe_mma.hpp). Grid (row tiles, token tiles of the
// largest group, experts of the launch): a block whose expert has fewer tokens than its token
// tile starts returns at once.
#include "deepseek4/hip/moe_mma.hpp"

#include <type_traits>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/mma_matmul.hpp"
#include "deepseek4/hip/mma_tile.hpp"
#include "deepseek4/hip/swiglu.hpp"

namespace moepage::ds4::gpu {
namespace {

#if defined(MOEPAGE_GPU_NVIDIA)
// Two blocks of 32-token tiles per multiprocessor (16 warps to hide the decode's and the matrix
// instructions' latency) hold a thread to 128 registers; the 64-token tile's accumulators need more.
template <int BN>
constexpr int kMmaBlocksPerSm = BN == kMmaFewTokens ? 2 : 1;

template <WeightCode W, ExpertPrecision X, int BN>
__global__ void __launch_bounds__(kMmaThreads, kMmaBlocksPerSm<BN>)
    expert_up_mma_kernel(const std::byte* const* table_row, PartArgs w1, PartArgs w3, int64_t D, int64_t I, Band band,
                         const float* yn, float limit, float* act, ExpertScaleFault fault) {
  kernel_entry();
  const int32_t b = int32_t(blockIdx.z);
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const int32_t begin = band.starts()[b] + int32_t(blockIdx.y) * BN, end = band.starts()[b + 1];
  if (begin >= end) return;
  const int32_t expert = band.experts()[b];
  const std::byte* slot = table_row[expert];
  const DeviceMat m1 = part_mat(slot, w1, I, D), m3 = part_mat(slot, w3, I, D);
  const int32_t* tokens = band.tokens() + begin;
  const int32_t* pairs = band.pairs() + begin;
  const int n = end - begin < BN ? end - begin : BN;
  mma_block<W, true, X, BN>(
      m1, m3, int64_t(blockIdx.x) * (kMmaRows / 2), I, D, [&](int t) { return yn + int64_t(tokens[t]) * D; }, n,
      [&](int64_t r, int t, float g, float u) { act[int64_t(pairs[t]) * I + r] = swiglu_value(g, u, limit); },
      fault.record, expert_scale_fault_key(fault.layer, uint32_t(expert)));
}

template <WeightCode W, ExpertPrecision X, int BN>
__global__ void __launch_bounds__(kMmaThreads, kMmaBlocksPerSm<BN>)
    expert_down_mma_kernel(const std::byte* const* table_row, PartArgs w2, int64_t D, int64_t I, Band band,
                           const float* act, float* ex_out, ExpertScaleFault fault) {
  kernel_entry();
  const int32_t b = int32_t(blockIdx.z);
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const int32_t begin = band.starts()[b] + int32_t(blockIdx.y) * BN, end = band.starts()[b + 1];
  if (begin >= end) return;
  const int32_t expert = band.experts()[b];
  const std::byte* slot = table_row[expert];
  const DeviceMat m2 = part_mat(slot, w2, D, I);
  const int32_t* pairs = band.pairs() + begin;
  const int n = end - begin < BN ? end - begin : BN;
  mma_block<W, false, X, BN>(
      m2, m2, int64_t(blockIdx.x) * kMmaRows, D, I, [&](int t) { return act + int64_t(pairs[t]) * I; }, n,
      [&](int64_t r, int t, float v) { ex_out[int64_t(pairs[t]) * D + r] = v; }, fault.record,
      expert_scale_fault_key(fault.layer, uint32_t(expert)));
}
#endif

}  // namespace

bool expert_mma_applies(WeightCode up_code, WeightCode down_code, int64_t D, int64_t I, const PartArgs& w1,
                        const PartArgs& w3, const PartArgs& w2, bool slots_aligned) {
  return slots_aligned && mma_encoding(up_code) && mma_encoding(down_code) && mma_shape_ok(D) && mma_shape_ok(I) &&
         w1.offset % 16 == 0 && w3.offset % 16 == 0 && w2.offset % 16 == 0 && matrix_cores_available();
}

int32_t expert_token_tile(int64_t pairs, int64_t used_experts) {
  return pairs <= int64_t(kMmaFewTokens) * used_experts ? kMmaFewTokens : kMmaTokens;
}

void launch_expert_mma(const std::byte* const* table_row, WeightCode up_code, WeightCode down_code, const PartArgs& w1,
                       const PartArgs& w3, const PartArgs& w2, int64_t D, int64_t I, const Band& band, int32_t count,
                       int32_t max_pairs, int32_t token_tile, const float* yn, float limit, float* act, float* ex_out,
                       ExpertPrecision precision, const ExpertScaleFault& fault, Stream stream) {
#if defined(MOEPAGE_GPU_NVIDIA)
  if (precision == ExpertPrecision::Fp16 && (up_code != WeightCode::FP4 || down_code != WeightCode::FP4))
    precision = ExpertPrecision::SplitBf16;
  auto launch_variant = [&](auto tile, auto precision_of) {
    constexpr int BN = decltype(tile)::value;
    constexpr ExpertPrecision X = decltype(precision_of)::value;
    const unsigned tiles = unsigned((max_pairs + BN - 1) / BN);
    const dim3 up_grid(unsigned((I + kMmaRows / 2 - 1) / (kMmaRows / 2)), tiles, unsigned(count));
    const dim3 down_grid(unsigned((D + kMmaRows - 1) / kMmaRows), tiles, unsigned(count));
    with_weight_code(up_code, [&](auto wc) {
      constexpr WeightCode W = decltype(wc)::value;
      if constexpr (mma_encoding(W) && (X != ExpertPrecision::Fp16 || W == WeightCode::FP4))
        launch("gpu moe expert w1/w3 (matrix cores)", expert_up_mma_kernel<W, X, BN>, up_grid, kMmaThreads, 0,
               native(stream), table_row, w1, w3, D, I, band, yn, limit, act, fault);
    });
    with_weight_code(down_code, [&](auto wc) {
      constexpr WeightCode W = decltype(wc)::value;
      if constexpr (mma_encoding(W) && (X != ExpertPrecision::Fp16 || W == WeightCode::FP4))
        launch("gpu moe expert w2 (matrix cores)", expert_down_mma_kernel<W, X, BN>, down_grid, kMmaThreads, 0,
               native(stream), table_row, w2, D, I, band, act, ex_out, fault);
    });
  };
  auto with_tile = [&](auto precision_of) {
    if (token_tile == kMmaFewTokens) launch_variant(std::integral_constant<int, kMmaFewTokens>{}, precision_of);
    else launch_variant(std::integral_constant<int, kMmaTokens>{}, precision_of);
  };
  using P = ExpertPrecision;
  switch (precision) {
    case P::Fp16: with_tile(std::integral_constant<P, P::Fp16>{}); break;
    case P::SplitBf16: with_tile(std::integral_constant<P, P::SplitBf16>{}); break;
    case P::Bf16: with_tile(std::integral_constant<P, P::Bf16>{}); break;
  }
#else
  (void)table_row, (void)up_code, (void)down_code, (void)w1, (void)w3, (void)w2, (void)D, (void)I, (void)band;
  (void)count, (void)max_pairs, (void)token_tile, (void)yn, (void)limit, (void)act, (void)ex_out, (void)precision;
  (void)fault, (void)stream;
  throw GpuError("gpu moe: the matrix-core path is not built for this GPU");
#endif
}

}  // namespace moepage::ds4::gpu
