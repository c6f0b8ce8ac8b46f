#include "deepseek4/forward/scratch.hpp"

#include <algorithm>

namespace moepage::ds4 {

void Scratch::allocate(const Config& c, int64_t S, unsigned n_threads, int64_t window_plus_entries,
                       int64_t max_index_entries) {
  max_batch = S;
  threads = n_threads;
  const size_t s = size_t(S), N = c.hc_mult, D = c.hidden_size, H = c.num_attention_heads, hd = c.head_dim,
               ihd = c.index_head_dim, nh = c.index_n_heads, E = c.n_routed_experts, k = c.num_experts_per_tok,
               I = c.moe_intermediate_size;
  X.assign(s * N * D, 0);
  X2.assign(s * N * D, 0);
  hc_flat.assign(s * N * D, 0);
  hc_mixes.assign(s * (2 + N) * N, 0);
  hc_pre.assign(s * N, 0);
  post.assign(s * N, 0);
  comb.assign(s * N * N, 0);
  u.assign(s * D, 0);
  xn.assign(s * D, 0);
  block_out.assign(s * D, 0);
  cos.assign(s * c.qk_rope_head_dim / 2, 0);
  sin.assign(s * c.qk_rope_head_dim / 2, 0);
  q_lat.assign(s * c.q_lora_rank, 0);
  q.assign(s * H * hd, 0);
  kv.assign(s * hd, 0);
  comp_kv.assign(s * 2 * hd, 0);
  comp_gate.assign(s * 2 * hd, 0);
  comp_tmp.assign(2 * std::max(hd, ihd) + c.qk_rope_head_dim, 0);
  attn_out.assign(s * H * hd, 0);
  oa.assign(s * c.o_groups * c.o_lora_rank, 0);
  attn_logits_stride = window_plus_entries;
  attn_logits.assign(size_t(n_threads) * size_t(window_plus_entries), 0);
  idx_kv.assign(s * 2 * ihd, 0);
  idx_gate.assign(s * 2 * ihd, 0);
  idx_q.assign(s * nh * ihd, 0);
  idx_w.assign(s * nh, 0);
  idx_scores_stride = std::max<int64_t>(1, max_index_entries);
  idx_scores.assign(size_t(n_threads) * size_t(idx_scores_stride), 0);
  sel.assign(s * std::max<size_t>(1, c.index_topk), 0);
  n_sel.assign(s, 0);
  router_logits.assign(s * E, 0);
  router_scores.assign(s * E, 0);
  router_biased.assign(E, 0);
  route_idx.assign(s * k, 0);
  forced_idx.assign(s * k, 0);
  route_w.assign(s * k, 0);
  expert_count.assign(E, 0);
  expert_start.assign(E + 1, 0);
  expert_tokens.assign(s * k, 0);
  expert_weights.assign(s * k, 0);
  experts_used.assign(E, 0);
  expert_slots.assign(E, nullptr);
  // One expert may take a token more than once (a hash table row can repeat an expert).
  ex_x.assign(s * k * D, 0);
  ex_h1.assign(s * k * I, 0);
  ex_h3.assign(s * k * I, 0);
  ex_out.assign(s * k * D, 0);
}

}  // namespace moepage::ds4
