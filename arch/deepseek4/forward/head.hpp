// The output head: collapse the N streams with the HC head, final RMSNorm, lm head.
#pragma once
#include <cstdint>

#include "deepseek4/cpu/thread_pool.hpp"
#include "deepseek4/forward/params.hpp"
#include "deepseek4/forward/scratch.hpp"

namespace moepage::ds4 {

// X: [S, N, D] streams of the S rows wanted; logits: [S, vocab].
void output_head(cpu::ThreadPool& pool, const ModelParams& mp, const Config& c, const float* X, int64_t S, Scratch& sc,
                 float* logits);

}  // namespace moepage::ds4
