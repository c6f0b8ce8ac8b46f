// The attention block's working buffers on the device (plain C++: tests read them back). Sized
// once by allocate_attention_scratch for max_batch tokens and max_context positions.
#pragma once
#include <cstdint>

#include "deepseek4/hip/attention.hpp"
#include "deepseek4/hip/side_stream.hpp"

namespace moepage::ds4::gpu {

struct AttentionScratch {
  int64_t max_batch = 0;
  int64_t max_context = 0;
  int64_t comp_width = 0;                               // widest main compressor row (2*hd with overlap)
  int64_t index_width = 0;                              // widest indexer compressor row
  int64_t max_index_entries = 0;                        // row stride of idx_scores
  int64_t index_topk = 0;                               // row stride of sel (at least 1)
  float *q_lat = nullptr, *q = nullptr, *kv = nullptr;  // [B, q_lora], [B, H*hd], [B, hd]
  float *comp_kv = nullptr, *comp_gate = nullptr;       // [B, comp_width]
  float *idx_kv = nullptr, *idx_gate = nullptr;         // [B, index_width]
  float *idx_q = nullptr, *idx_w = nullptr;             // [B, nh*ihd], [B, nh]
  float* idx_scores = nullptr;                          // [B, max_index_entries]
  int32_t* sel = nullptr;                               // [B, index_topk]: picked entries, ascending
  int32_t* n_sel = nullptr;                             // [B]
  float *attn_out = nullptr, *oa = nullptr;             // [B, H*hd], [B, groups*o_lora]
  float* attend_part = nullptr;                         // split decode: per (token, head, split) partials
  uint32_t* attend_tickets = nullptr;                   // split decode: blocks done per (token, head)
  // Prompt batches on the matrix cores: the keys they can see as bf16 parts (attend_key_parts.hpp),
  // key_ring_rows ring slots then key_entry_rows compressed entries; null where that path never runs.
  uint16_t* key_parts = nullptr;
  int64_t key_ring_rows = 0, key_entry_rows = 0;
  // The compressors and the indexer's weights projection run beside the query chain, and so does
  // the shared KV head except for a single token (project_token in attention.hip).
  SideStream side;
};

}  // namespace moepage::ds4::gpu
