// The attention block on the GPU, the twin of forward/attention.hpp (+ compressor and indexer):
// Q/KV projections, the shared KV head written into the sliding ring, the CSA/HCA compressors,
// the CSA indexer's top-k selection (on the device), attention over ring + compressed entries
// with the per-head sink, the inverse rope of the output and the grouped output projection.
#pragma once
#include <cstdint>
#include <memory>

#include "deepseek4/hip/device_params.hpp"

namespace moepage::ds4::gpu {

// Every working buffer of the attention block for batches up to max_batch tokens and sequences up
// to max_context positions (device memory from the arena; sized once).
struct AttentionScratch;  // defined in attention_scratch.hpp (owned by the attention block)

std::unique_ptr<AttentionScratch> allocate_attention_scratch(const Config& c, const GpuModelParams& p,
                                                             int64_t max_batch, int64_t max_context, DeviceArena& arena,
                                                             DeviceArena& pinned);

// out [S, D] = attention of the S tokens at positions p0.. (xn [S, D], the normed block input).
// Updates `st` (ring, compressors). ring_size as in the CPU Model (min(ctx, window + max_batch - 1)).
void attention(const GpuLayerParams& lp, const Config& c, GpuLayerState& st, int64_t ring_size, int64_t p0, int64_t S,
               const float* xn, AttentionScratch& sc, float* out, Stream stream);

}  // namespace moepage::ds4::gpu
