// The attention block of one layer for a batch of S consecutive tokens at positions p0..p0+S-1:
//   Q: q_lat = q_norm(wq_a x); q = wq_b q_lat per head, unweighted RMS norm, RoPE on the tail.
//   KV (one shared head, K = V): kv_norm(wkv x), RoPE; written into the sliding ring.
//   Keys seen by query t: the raw KV of positions max(0, t - W + 1)..t, plus compressed entries:
//   HCA all w < (t+1)/ratio, CSA the indexer's top-k among those.
//   softmax(q.k * head_dim^-0.5) with the head's sink logit in the denominator; the output's rope
//   dims are rotated back by the query's angle; then the grouped output projection wo_a, wo_b.
#pragma once
#include <cstdint>

#include "deepseek4/cpu/thread_pool.hpp"
#include "deepseek4/forward/params.hpp"
#include "deepseek4/forward/scratch.hpp"
#include "deepseek4/forward/state.hpp"

namespace moepage::ds4 {

// ring_size: slots of st.ring. xn: [S, D] (after attn_norm). out: [S, D].
void attention(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, LayerState& st, int64_t ring_size,
               int64_t p0, int64_t S, const float* xn, Scratch& sc, float* out);

}  // namespace moepage::ds4
