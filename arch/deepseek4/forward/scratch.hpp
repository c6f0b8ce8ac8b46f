// Every working buffer of one batch step, allocated once by the Model for its max batch, max
// context and thread count. Blocks receive the pieces they use.
#pragma once
#include <cstdint>
#include <vector>

#include "deepseek4/model/config.hpp"

namespace moepage::ds4 {

struct Scratch {
  int64_t max_batch = 0;
  unsigned threads = 1;
  // Streams and mHC.
  std::vector<float> X, X2;                      // [S, N, D]
  std::vector<float> hc_flat, hc_mixes, hc_pre;  // [S, N*D], [S, (2+N)N], [S, N]
  std::vector<float> post, comb;                 // [S, N], [S, N*N]
  std::vector<float> u, xn, block_out;           // [S, D]
  // Attention.
  std::vector<float> cos, sin;            // [S, rope/2]
  std::vector<float> q_lat, q, kv;        // [S, q_lora], [S, H*hd], [S, hd]
  std::vector<float> comp_kv, comp_gate;  // [S, 2*hd]
  std::vector<float> comp_tmp;            // [2*max(hd, ihd) + rope]
  std::vector<float> attn_out, oa;        // [S, H*hd], [S, g*o_lora]
  std::vector<float> attn_logits;         // [threads, window + max compressed]
  int64_t attn_logits_stride = 0;
  // Indexer.
  std::vector<float> idx_kv, idx_gate;  // [S, 2*ihd]
  std::vector<float> idx_q, idx_w;      // [S, nh*ihd], [S, nh]
  std::vector<float> idx_scores;        // [threads, max entries]
  int64_t idx_scores_stride = 0;
  std::vector<int32_t> sel;    // [S, index_topk]
  std::vector<int32_t> n_sel;  // [S]
  // MoE.
  std::vector<float> router_logits, router_scores;  // [S, E]
  std::vector<float> router_biased;                 // [E]
  std::vector<int32_t> route_idx;                   // [S, k]
  std::vector<int32_t> forced_idx;                  // [S, k] ForcedRouting's experts for one layer
  std::vector<float> route_w;                       // [S, k]
  std::vector<int32_t> expert_count, expert_start;  // [E], [E + 1]
  std::vector<int32_t> expert_tokens;               // [S*k]: token of each (expert, slot) pair
  std::vector<float> expert_weights;                // [S*k]
  std::vector<int32_t> experts_used;                // [E]
  std::vector<const std::byte*> expert_slots;       // [E]
  std::vector<float> ex_x, ex_h1, ex_h3, ex_out;    // [S*k, D], [S*k, I], [S*k, I], [S*k, D]

  void allocate(const Config& c, int64_t max_batch, unsigned threads, int64_t window_plus_entries,
                int64_t max_index_entries);
};

}  // namespace moepage::ds4
