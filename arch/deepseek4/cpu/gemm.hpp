// y = W x for a few tokens at once, straight from the stored encoding (see matref.hpp). Each
// thread owns a band of output rows; each row segment is decoded once into registers/L1 and used
// for every token of the batch, so prefill pays the decode cost once per row, not per token.
#pragma once
#include <cstdint>

#include "deepseek4/cpu/matref.hpp"
#include "deepseek4/cpu/thread_pool.hpp"

namespace moepage::ds4::cpu {

// x: n_tokens rows of W.cols floats, ld_x apart. y: n_tokens rows of W.rows floats, ld_y apart.
// Accumulates in float per scale block, blocks summed in float.
void matmul(ThreadPool& pool, const MatRef& w, const float* x, int64_t ld_x, float* y, int64_t ld_y, int64_t n_tokens);

// The same for one thread, on output rows [r0, r1) only (callers that already parallelise).
void matmul_rows(const MatRef& w, const float* x, int64_t ld_x, float* y, int64_t ld_y, int64_t n_tokens, int64_t r0,
                 int64_t r1);

}  // namespace moepage::ds4::cpu
