// The pieces the attention block composes, each in its own .hip file (no HIP header here):
// the compressors (compressor.hip) and the CSA indexer (indexer.hip).
#pragma once
#include <cstdint>

#include "deepseek4/hip/attention_scratch.hpp"
#include "deepseek4/hip/device_params.hpp"

namespace moepage::ds4::gpu {

// compressor_push for tokens p0..p0+S-1 in order, in one launch: kv/gate ([S, p.width], gate
// without ape) fill the open window; every token that closes a window emits its entry. The host
// counters of `s` (n_entries, has_prev) are checked before and advanced after the launch.
void compress_tokens(const GpuCompressorParams& p, const DeviceRope& rope, float eps, int64_t p0, int64_t S,
                     const float* kv, const float* gate, GpuCompressorState& s, Stream stream);

// Feeds the batch (xn: [S, D]) into the CSA indexer's compressor.
void indexer_compress(const GpuLayerParams& lp, const Config& c, GpuLayerState& st, int64_t p0, int64_t S,
                      const float* xn, AttentionScratch& sc, Stream stream);

// Fills sc.sel / sc.n_sel for every token of the batch (q_lat: [S, q_lora], normed), as
// indexer_select on the CPU: all visible entries when they are at most index_topk, otherwise the
// top index_topk by score (ties to the lower index), listed in ascending order.
void indexer_select(const GpuLayerParams& lp, const Config& c, const GpuLayerState& st, int64_t p0, int64_t S,
                    const float* q_lat, const float* xn, AttentionScratch& sc, Stream stream);

}  // namespace moepage::ds4::gpu
