// One token's products of several matrices with the same input in one launch: y_i = W_i x. A
// decode step's attention makes several small products of the same normed input (the query's
// latent and the shared KV head; a compressor's KV and gate, the indexer compressor's two), each
// a launch of a few microseconds that fills a fraction of the device. Launched together they
// share one ramp and one tail, and a chain of them becomes a single link.
#pragma once
#include <span>

#include "deepseek4/cpu/matref.hpp"
#include "deepseek4/hip/gemm_policy.hpp"
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

// At most this many products in one launch.
constexpr size_t kMaxManyProducts = 4;

struct MatProduct {
  cpu::MatRef w;
  float* y = nullptr;  // w.rows floats
};

// Whether matmul_many takes these products of x: one to kMaxManyProducts matrices of one
// encoding and one column count, each taken by the single-token kernels, under a policy that
// keeps one token on them (not the library, not the matrix cores).
bool matmul_many_applies(std::span<const MatProduct> products, const float* x, const GemmPolicy& policy = {});

// Every product's y = W x for one token (x: the matrices' column count of floats), the same sums
// in the same order as matmul() of each alone, so the same bits. Throws GpuError where
// matmul_many_applies is false.
void matmul_many(std::span<const MatProduct> products, const float* x, Stream stream, const GemmPolicy& policy = {});

}  // namespace moepage::ds4::gpu
