// The single-token expert products on the matrix cores (moe_mma.hpp): grid (row blocks, experts
// of the launch). FP4 experts on fp16 operands (mma_gemv_fp4.hpp): each warp of a block 8 rows of
// an expert's w1 and w3 (SwiGLU'd) or 16 rows of its w2, across all columns; the rest
// (mma_gemv.hpp): each block 8 rows of w1 and w3 or 16 of w2, its warps splitting the columns.
#include <type_traits>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/mma_gemv.hpp"
#include "deepseek4/hip/mma_gemv_fp4.hpp"
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
  if (band.skips(b)) return;                                       // a group the other launch of a slot lookup computes
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
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const std::byte* slot = table_row[band.experts()[b]];
  const DeviceMat m2 = part_mat(slot, w2, D, I);
  const int64_t dest = band.pairs()[pair];
  float* out = ex_out + dest * D;
  mma_gemv_block<W, false, Split>(m2, m2, int64_t(blockIdx.x) * kGemvMmaRows, D, I, act + dest * I,
                                  [&](int64_t r, float v) { out[r] = v; });
}

// Four blocks of 4 warps a multiprocessor (about 105 registers a thread). The chunking was picked
// on the H100 among five others (two or four chunks in turn, one to four steps a chunk, two warps
// splitting a row group's columns): all within 5% of each other and of the CUDA-core kernels in
// decode (bench/results/2026-12-06-decode-kernels.md).
constexpr int kFp4SingleChunkSteps = 2, kFp4SingleChunks = 3, kFp4SingleBlocksPerSm = 4;
using Fp4SingleWarp = Fp4GemvWarp<kFp4SingleChunkSteps, kFp4SingleChunks>;

// Lane q = 0's sums of a warp's rows: row g's and row g + 8's (pair mode: m1's row g).
template <bool Pair, class Store>
__device__ inline void fp4_gemv_store(const float (&acc)[4], int64_t row0, int64_t n_rows, Store store) {
  const int lane = int(threadIdx.x) % 32, g = lane / 4;
  if (lane % 4 != 0) return;
  if constexpr (Pair) {
    if (row0 + g < n_rows) store(row0 + g, acc[0], acc[2]);
  } else {
    if (row0 + g < n_rows) store(row0 + g, acc[0]);
    if (row0 + g + 8 < n_rows) store(row0 + g + 8, acc[2]);
  }
}

__global__ void __launch_bounds__(kFp4GemvThreads, kFp4SingleBlocksPerSm)
    expert_up_fp4_single_kernel(const std::byte* const* table_row, PartArgs w1, PartArgs w3, int64_t D, int64_t I,
                                Band band, const float* yn, float limit, float* act, ExpertScaleFault fault) {
  kernel_entry();
  extern __shared__ uint4 fp4_single_token[];
  const int32_t b = int32_t(blockIdx.y), pair = band.starts()[b], expert = band.experts()[b];
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const std::byte* slot = table_row[expert];
  const DeviceMat m1 = part_mat(slot, w1, I, D), m3 = part_mat(slot, w3, I, D);
  const int64_t row0 = (int64_t(blockIdx.x) * kFp4GemvWarps + int64_t(threadIdx.x) / 32) * 8;
  Fp4SingleWarp w(m1, m3, row0, I, D, std::true_type{});
  w.prefetch();
  stage_token_f16(yn + int64_t(band.tokens()[pair]) * D, D, fp4_single_token);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  w.run(fp4_single_token, fault.record, expert_scale_fault_key(fault.layer, uint32_t(expert)), acc);
  float* out = act + int64_t(band.pairs()[pair]) * I;
  fp4_gemv_store<true>(acc, row0, I, [&](int64_t r, float g, float u) { out[r] = swiglu_value(g, u, limit); });
}

__global__ void __launch_bounds__(kFp4GemvThreads, kFp4SingleBlocksPerSm)
    expert_down_fp4_single_kernel(const std::byte* const* table_row, PartArgs w2, int64_t D, int64_t I, Band band,
                                  const float* act, float* ex_out, ExpertScaleFault fault) {
  kernel_entry();
  extern __shared__ uint4 fp4_single_token[];
  const int32_t b = int32_t(blockIdx.y), pair = band.starts()[b], expert = band.experts()[b];
  if (band.skips(b)) return;  // a group the other launch of a slot lookup computes
  const std::byte* slot = table_row[expert];
  const DeviceMat m2 = part_mat(slot, w2, D, I);
  const int64_t row0 = (int64_t(blockIdx.x) * kFp4GemvWarps + int64_t(threadIdx.x) / 32) * 16;
  Fp4SingleWarp w(m2, m2, row0, D, I, std::false_type{});
  w.prefetch();
  const int64_t dest = band.pairs()[pair];
  stage_token_f16(act + dest * I, I, fp4_single_token);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  w.run(fp4_single_token, fault.record, expert_scale_fault_key(fault.layer, uint32_t(expert)), acc);
  float* out = ex_out + dest * D;
  fp4_gemv_store<false>(acc, row0, D, [&](int64_t r, float v) { out[r] = v; });
}
#endif

}  // namespace

bool expert_fp4_single_applies(ExpertPrecision precision, WeightCode up_code, WeightCode down_code, int64_t D,
                               int64_t I, const PartArgs& w1, const PartArgs& w3, const PartArgs& w2) {
  return precision == ExpertPrecision::Fp16 && up_code == WeightCode::FP4 && down_code == WeightCode::FP4 &&
         fp4_gemv_cols_ok(D) && fp4_gemv_cols_ok(I) && w1.has_scale && w3.has_scale && w2.has_scale &&
         w1.offset % 16 == 0 && w3.offset % 16 == 0 && w2.offset % 16 == 0 && matrix_cores_available();
}

void launch_expert_mma_single(const std::byte* const* table_row, WeightCode up_code, WeightCode down_code,
                              const PartArgs& w1, const PartArgs& w3, const PartArgs& w2, int64_t D, int64_t I,
                              const Band& band, int32_t count, const float* yn, float limit, float* act, float* ex_out,
                              ExpertPrecision precision, const ExpertScaleFault& fault, Stream stream) {
#if defined(MOEPAGE_GPU_NVIDIA)
  if (expert_fp4_single_applies(precision, up_code, down_code, D, I, w1, w3, w2)) {
    const dim3 up_grid(unsigned((I + 8 * kFp4GemvWarps - 1) / (8 * kFp4GemvWarps)), unsigned(count));
    const dim3 down_grid(unsigned((D + 16 * kFp4GemvWarps - 1) / (16 * kFp4GemvWarps)), unsigned(count));
    launch("gpu moe expert w1/w3 (single token, fp16 matrix cores)", expert_up_fp4_single_kernel, up_grid,
           kFp4GemvThreads, unsigned(D * 2), native(stream), table_row, w1, w3, D, I, band, yn, limit, act, fault);
    launch("gpu moe expert w2 (single token, fp16 matrix cores)", expert_down_fp4_single_kernel, down_grid,
           kFp4GemvThreads, unsigned(I * 2), native(stream), table_row, w2, D, I, band, act, ex_out, fault);
    return;
  }
  const bool split = precision != ExpertPrecision::Bf16;
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
  (void)count, (void)yn, (void)limit, (void)act, (void)ex_out, (void)precision, (void)fault, (void)stream;
  throw GpuError("gpu moe: the matrix-core path is not built for this GPU");
#endif
}

}  // namespace moepage::ds4::gpu
