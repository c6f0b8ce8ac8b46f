// The pieces the attention block composes, each in its own .hip file (no HIP header here):
// the compressors (compressor.hip) and the CSA indexer's selection (indexer.hip).
#pragma once
#include <cstdint>

#include "deepseek4/hip/attention_scratch.hpp"
#include "deepseek4/hip/device_params.hpp"

namespace moepage::ds4::gpu {

// compressor_push for tokens p0..p0+S-1, as if in order: kv/gate ([S, p.width], gate without ape)
// fill the open window; every window that closes in the batch emits its entry (one block each, in
// one launch), then a second launch leaves the slots and the previous half as the walk would. The host
// counters of `s` (n_entries, has_prev) are checked before and advanced after the launch.
void compress_tokens(const GpuCompressorParams& p, const DeviceRope& rope, float eps, int64_t p0, int64_t S,
                     const float* kv, const float* gate, GpuCompressorState& s, Stream stream);

// One compressor's batch for compress_tokens_two.
struct CompressorBatch {
  const GpuCompressorParams& p;
  const float *kv, *gate;
  GpuCompressorState& s;
};

// compress_tokens for two compressors of one position range (a CSA layer's main and indexer
// compressors), their state updates in one launch: a decode step's side chain a launch shorter.
void compress_tokens_two(const CompressorBatch& first, const CompressorBatch& second, const DeviceRope& rope, float eps,
                         int64_t p0, int64_t S, Stream stream);

// True when some token of the batch sees more indexer entries than index_topk, so the entries
// must be scored: the attention block then fills sc.idx_q (index_wq_b @ q_lat, not yet roped) and
// sc.idx_w (index_weights_proj @ xn) before indexer_select.
bool indexer_scores(const GpuLayerParams& lp, const Config& c, int64_t p0, int64_t S);

// Fills sc.sel / sc.n_sel for every token of the batch, as indexer_select on the CPU: all visible
// entries when they are at most index_topk, otherwise the top index_topk by score (ties to the
// lower index), listed in ascending order. The indexer's compressor has taken the batch already.
void indexer_select(const GpuLayerParams& lp, const Config& c, const GpuLayerState& st, int64_t p0, int64_t S,
                    AttentionScratch& sc, Stream stream);

}  // namespace moepage::ds4::gpu
