// The lightning indexer of CSA layers: picks, per query, which compressed entries it attends to.
//   keys      its own overlapping compressor at index_head_dim (state.index_comp)
//   queries   index wq_b(q_lat) per index head, RoPE (compress rope) at the token position
//   weights   weights_proj(x) * n_heads^-0.5
//   score     I[t, w] = sum_h weight[t,h] * ReLU(q[t,h] . K[w]) * index_head_dim^-0.5
// over the visible entries w < (t+1)/ratio, keeping the top min(index_topk, visible).
#pragma once
#include <cstdint>

#include "deepseek4/cpu/thread_pool.hpp"
#include "deepseek4/forward/params.hpp"
#include "deepseek4/forward/scratch.hpp"
#include "deepseek4/forward/state.hpp"

namespace moepage::ds4 {

// Feed the batch into the indexer's compressor (xn: [S, D]).
void indexer_compress(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, LayerState& st, int64_t p0,
                      int64_t S, const float* xn, Scratch& sc);

// Fill sc.sel / sc.n_sel for every token of the batch (q_lat: [S, q_lora]). Entries are listed
// in ascending order of their index (the set is what matters to attention).
void indexer_select(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, const LayerState& st, int64_t p0,
                    int64_t S, const float* q_lat, const float* xn, Scratch& sc);

}  // namespace moepage::ds4
