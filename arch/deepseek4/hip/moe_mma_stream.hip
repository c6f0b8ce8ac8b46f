// The routed FP4 experts of a prompt on the streamed fp16 tiles (moe_mma.hpp, mma_tile_stream.hpp):
// the token rows rounded to fp16 once per layer, w1/w3 and the SwiGLU writing fp16 activations in
// the tile's k order, w2 reading them as they are.
#include <type_traits>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/dynamic_shared.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/mma_tile_stream.hpp"
#include "deepseek4/hip/moe_mma.hpp"
#include "deepseek4/hip/swiglu.hpp"

namespace moepage::ds4::gpu {
namespace {

#if defined(MOEPAGE_GPU_NVIDIA)
// As the register tiles (moe_mma.hip): two 32-token blocks a multiprocessor, one of 64 tokens.
template <int BN>
constexpr int kStreamBlocksPerSm = BN == kMmaFewTokens ? 2 : 1;

// x16[i] for the 8-column group i / 8 of yn: each group's values in k order, rounded as the
// register tile rounds its token tile (one paired conversion per two columns).
__global__ void round_tokens_f16_kernel(const float* yn, int64_t groups, uint16_t* x16) {
  kernel_entry();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= groups) return;
  const float4 lo = reinterpret_cast<const float4*>(yn)[2 * i], hi = reinterpret_cast<const float4*>(yn)[2 * i + 1];
  reinterpret_cast<uint4*>(x16)[i] = make_uint4(mma::pack_f16x2(lo.x, hi.x), mma::pack_f16x2(lo.y, hi.y),
                                                mma::pack_f16x2(lo.z, hi.z), mma::pack_f16x2(lo.w, hi.w));
}

template <int BN>
__global__ void __launch_bounds__(kMmaThreads, kStreamBlocksPerSm<BN>)
    expert_up_stream_kernel(const std::byte* const* table_row, PartArgs w1, PartArgs w3, int64_t D, int64_t I,
                            Band band, const uint16_t* x16, float limit, uint16_t* act16, ExpertScaleFault fault) {
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
  // The activation rounded to fp16 here is what w2's token tile would round it to.
  mma_stream_block<true, BN>(
      m1, m3, int64_t(blockIdx.x) * (kMmaRows / 2), I, D, [&](int t) { return x16 + int64_t(tokens[t]) * D; }, n,
      [&](int64_t r, int t, float g, float u) {
        act16[int64_t(pairs[t]) * I + k_order_place(r)] = uint16_t(mma::pack_f16x2(swiglu_value(g, u, limit), 0.f));
      },
      fault.record, expert_scale_fault_key(fault.layer, uint32_t(expert)));
}

template <int BN>
__global__ void __launch_bounds__(kMmaThreads, kStreamBlocksPerSm<BN>)
    expert_down_stream_kernel(const std::byte* const* table_row, PartArgs w2, int64_t D, int64_t I, Band band,
                              const uint16_t* act16, float* ex_out, ExpertScaleFault fault) {
  kernel_entry();
  const int32_t b = int32_t(blockIdx.z);
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const int32_t begin = band.starts()[b] + int32_t(blockIdx.y) * BN, end = band.starts()[b + 1];
  if (begin >= end) return;
  const int32_t expert = band.experts()[b];
  const DeviceMat m2 = part_mat(table_row[expert], w2, D, I);
  const int32_t* pairs = band.pairs() + begin;
  const int n = end - begin < BN ? end - begin : BN;
  mma_stream_block<false, BN>(
      m2, m2, int64_t(blockIdx.x) * kMmaRows, D, I, [&](int t) { return act16 + int64_t(pairs[t]) * I; }, n,
      [&](int64_t r, int t, float v) { ex_out[int64_t(pairs[t]) * D + r] = v; }, fault.record,
      expert_scale_fault_key(fault.layer, uint32_t(expert)));
}
#endif

}  // namespace

bool expert_stream_applies(WeightCode up_code, WeightCode down_code, int64_t D, int64_t I, const PartArgs& w1,
                           const PartArgs& w3, const PartArgs& w2) {
  return up_code == WeightCode::FP4 && down_code == WeightCode::FP4 && stream_cols_ok(D) && stream_cols_ok(I) &&
         w1.has_scale && w3.has_scale && w2.has_scale && w1.offset % 16 == 0 && w3.offset % 16 == 0 &&
         w2.offset % 16 == 0 && w1.scale_offset % 4 == 0 && w3.scale_offset % 4 == 0 && w2.scale_offset % 4 == 0 &&
         matrix_cores_available();
}

void launch_round_tokens_f16(const float* yn, int64_t S, int64_t D, uint16_t* x16, Stream stream) {
#if defined(MOEPAGE_GPU_NVIDIA)
  const int64_t groups = S * D / 8;
  if (groups == 0) return;
  launch("gpu moe tokens to fp16", round_tokens_f16_kernel, dim3(unsigned((groups + 255) / 256)), 256, 0,
         native(stream), yn, groups, x16);
#else
  (void)yn, (void)S, (void)D, (void)x16, (void)stream;
  throw GpuError("gpu moe: the streamed expert tiles are not built for this GPU");
#endif
}

void launch_expert_stream(const std::byte* const* table_row, const PartArgs& w1, const PartArgs& w3, const PartArgs& w2,
                          int64_t D, int64_t I, const Band& band, int32_t count, int32_t max_pairs, int32_t token_tile,
                          const uint16_t* x16, float limit, uint16_t* act16, float* ex_out,
                          const ExpertScaleFault& fault, Stream stream) {
#if defined(MOEPAGE_GPU_NVIDIA)
  auto launch_tile = [&](auto tile) {
    constexpr int BN = decltype(tile)::value;
    const unsigned tiles = unsigned((max_pairs + BN - 1) / BN);
    const dim3 up_grid(unsigned((I + kMmaRows / 2 - 1) / (kMmaRows / 2)), tiles, unsigned(count));
    const dim3 down_grid(unsigned((D + kMmaRows - 1) / kMmaRows), tiles, unsigned(count));
    const size_t up_shared = size_t(stream_shared_bytes(BN, D)), down_shared = size_t(stream_shared_bytes(BN, I));
    allow_dynamic_shared(reinterpret_cast<const void*>(expert_up_stream_kernel<BN>), up_shared);
    allow_dynamic_shared(reinterpret_cast<const void*>(expert_down_stream_kernel<BN>), down_shared);
    launch("gpu moe expert w1/w3 (streamed matrix tiles)", expert_up_stream_kernel<BN>, up_grid, kMmaThreads, up_shared,
           native(stream), table_row, w1, w3, D, I, band, x16, limit, act16, fault);
    launch("gpu moe expert w2 (streamed matrix tiles)", expert_down_stream_kernel<BN>, down_grid, kMmaThreads,
           down_shared, native(stream), table_row, w2, D, I, band, act16, ex_out, fault);
  };
  if (token_tile == kMmaFewTokens) launch_tile(std::integral_constant<int, kMmaFewTokens>{});
  else launch_tile(std::integral_constant<int, kMmaTokens>{});
#else
  (void)table_row, (void)w1, (void)w3, (void)w2, (void)D, (void)I, (void)band, (void)count, (void)max_pairs;
  (void)token_tile, (void)x16, (void)limit, (void)act16, (void)ex_out, (void)fault, (void)stream;
  throw GpuError("gpu moe: the streamed expert tiles are not built for this GPU");
#endif
}

}  // namespace moepage::ds4::gpu
