// The output head on the GPU: hc_head collapse, final RMSNorm, lm head -> logits [S, vocab].
#pragma once
#include <cstdint>

#include "deepseek4/hip/device_params.hpp"
#include "deepseek4/hip/hc.hpp"

namespace moepage::ds4::gpu {

// u and xn are [S, D] work buffers.
void output_head(const GpuModelParams& mp, const Config& c, const float* X, int64_t S, const GpuHcScratch& hs, float* u,
                 float* xn, float* logits, Stream stream);
// The same on streams that may still need the last block's hc_post (folded into the head's mHC).
void output_head(const GpuModelParams& mp, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& hs,
                 float* u, float* xn, float* logits, Stream stream);

// The greedy pick on the device: work[0] = the first index of the largest of logits[0..V), work[1] =
// the first index of a NaN (-1: none). `work` holds kGreedyWorkInts ints, zero-filled before the
// first call (the kernel leaves it ready for the next). Blocks split the vocabulary; the last to
// finish reduces their picks.
constexpr int64_t kGreedyMaxBlocks = 128;
constexpr int64_t kGreedyWorkInts = 3 + 3 * kGreedyMaxBlocks;
void greedy_token(const float* logits, int64_t V, int32_t* work, Stream stream);

}  // namespace moepage::ds4::gpu
