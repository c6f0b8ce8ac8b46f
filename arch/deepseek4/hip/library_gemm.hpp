// Dense weight products over many tokens (prefill) on the GPU vendor's BLAS library: the weight is
// dequantized once per call into bf16 (the same bf16 values the matrix-core tiles multiply,
// chunk_to_bf16 in mma_tile_staged.hpp), x is rounded into bf16 parts once per call (split: x's
// rounding and what it left, as in mma_operands.hpp), and the library multiplies them with float
// sums. The hand-written tiles decode every weight again for each token tile and convert x again
// for each row tile; at a 1,024-token prompt that repeated work, not the matrix instructions, is
// what bound them (bench/results/2026-12-04-prefill-steps.md).
//
// NVIDIA only, through cuBLAS (part of the CUDA toolkit every NVIDIA build already needs). Debian's
// ROCm 5.2 packages have no rocBLAS/hipBLAS, so on AMD matmul_library returns false and the
// caller keeps its kernels. For .hip files only.
#pragma once
#include <cstdint>
#include <memory>

#include "deepseek4/hip/decode.hpp"
#include "deepseek4/hip/gemm_policy.hpp"  // library_gemm_available()
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

// Whether matmul_library would take this product: an encoding it dequantizes (FP8, FP4, BF16),
// columns a multiple of 64, 16-byte aligned weight bytes and x (ld_x and x_group_stride multiples
// of 4 floats), and a stream that is not being captured into a graph.
bool library_gemm_applies(const DeviceMat& m, WeightCode code, const float* x, int64_t ld_x, int64_t x_group_stride,
                          Stream stream);

// y[t, r] = W[r] . x[t] for t < n_tokens, in the layout of matmul_grouped: rows_per_group rows of
// W read x + (r / rows_per_group) * x_group_stride (a plain product: rows_per_group = rows).
// split: x as two bf16 parts (GemmPolicy::split). cache (or null): where the weight's bf16 copy
// is kept between products (library_weight_cache.hpp). Returns false, doing nothing, where
// library_gemm_applies says no, a size exceeds cuBLAS's int, or the device has no room for the
// scratch (the bf16 weight, x's parts for up to kLibraryTokenChunk tokens, cuBLAS's 32 MiB
// workspace); throws GpuError if the library reports an error.
// The scratch comes from a memory pool of this file's own, ordered on `stream`, and stays cached
// in the pool for the next call.
bool matmul_library(const DeviceMat& m, WeightCode code, const float* x, int64_t ld_x, int64_t x_group_stride,
                    int64_t rows_per_group, float* y, int64_t ld_y, int64_t n_tokens, bool split,
                    LibraryWeightCache* cache, Stream stream);

// A product whose x arrives as its two bf16 parts, written by x's producer instead of rounded
// from floats here (the prompt attention's output for wo_a: attend_mma.hpp), in the layout
// matmul_library's split makes them: [groups, n_tokens, cols] of the rounding, then as many of what
// it left. Made before the producer runs, it takes every scratch the product needs (and
// dequantizes the weight), so once the parts are written the product cannot decline; where
// matmul_library would decline it, ready() is false and nothing is held. Its products are
// matmul_library's with split, bit for bit, for batches up to kLibraryTokenChunk tokens.
class LibraryPartsProduct {
 public:
  LibraryPartsProduct(const DeviceMat& m, WeightCode code, int64_t rows_per_group, int64_t ld_y, int64_t n_tokens,
                      LibraryWeightCache* cache, Stream stream);
  ~LibraryPartsProduct();
  LibraryPartsProduct(const LibraryPartsProduct&) = delete;
  LibraryPartsProduct& operator=(const LibraryPartsProduct&) = delete;
  bool ready() const { return impl_ != nullptr; }
  // y [n_tokens, ld_y] (groups rows_per_group apart) from the parts, on the stream given at
  // construction. Throws GpuError where not ready().
  void run(const uint16_t* parts, float* y);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Tokens per library call: x's parts for more are made and multiplied in turns, so the scratch of
// the widest input (wo_a: 8 groups of 4,096 columns) stays at 128 MiB whatever the prompt.
constexpr int64_t kLibraryTokenChunk = 1024;

}  // namespace moepage::ds4::gpu
