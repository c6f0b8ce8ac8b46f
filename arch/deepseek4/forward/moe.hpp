// The MoE block: router, routed experts through the ExpertSource, and the shared expert.
//   scores   sqrt(softplus(l)), sigmoid(l) or softmax(l) of the router logits l = gate x
//   choice   hash layers: tid2eid[token]; scored layers: top-k of (scores + bias), the bias
//            choosing only
//   weights  scores of the chosen / (their sum + 1e-20) * routed_scaling_factor
//   expert   w2 (silu(min(w1 x, limit)) * clamp(w3 x, -limit, limit))
// out = sum_k weight_k * expert_k(x) + shared(x). Experts are fetched in bands of at most
// source.max_batch() so a pager with few slots still serves a whole prefill batch.
#pragma once
#include <cstdint>

#include "deepseek4/cpu/thread_pool.hpp"
#include "deepseek4/forward/expert_parallel.hpp"
#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/forward/params.hpp"
#include "deepseek4/forward/scratch.hpp"

namespace moepage::ds4 {

struct MoeStats {
  uint64_t routed_experts = 0;  // (token, expert) pairs computed
  uint64_t acquires = 0;        // ExpertSource::acquire calls
  uint64_t table_uploads = 0;   // GPU only: uploads of a layer's expert slot pointer table
  uint64_t routed_ns = 0;       // CPU only: wall time in the routed experts' MLPs (acquire excluded)
  // GPU only, the split acquire: experts whose bytes were still being read when their band's
  // kernels began (each launched as its bytes landed), and the experts of those bands launched
  // before the first of them (hits computed while misses were read).
  uint64_t pending_experts = 0;
  uint64_t hits_first = 0;
  // GPU only, ModelOptions::direct_hits: layers of one token whose experts all hit, launched from
  // the router's own group record (no upload).
  uint64_t device_records = 0;
  // GPU only, ModelOptions::slot_table: layers of one token whose experts the router looked up in
  // the device slot table, and of those the ones with a miss (the device waited for the host).
  uint64_t slot_lookups = 0;
  uint64_t slot_stalls = 0;
  // One rank of an expert-parallel group: its all-reduces, and their time (mp_arch_stats 1.9).
  uint64_t collective_calls = 0;
  uint64_t collective_ns = 0;
};

// tokens: [S] ids (hash routing); yn: [S, D] after ffn_norm; out: [S, D]. forced: [S, k] experts
// to use instead of the router's choice (ForcedRouting), or null. ep: this call is one rank of an
// expert-parallel group (expert_parallel.hpp): only its own experts are acquired and computed,
// the shared expert only on rank 0, and `out` is the all-reduced sum of the ranks' parts; a
// failure here aborts the group's collective so the other ranks fail too instead of waiting.
void moe(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, uint32_t layer, const int32_t* tokens,
         int64_t S, const float* yn, ExpertSource& source, const ExpertLayout& layout, Scratch& sc, float* out,
         MoeStats& stats, const int32_t* forced = nullptr, const ExpertParallel* ep = nullptr);

// The (expert ids, weights) a token's router picks from its logits [E]; scores and biased are
// [E] scratch. forced: k experts to take instead of the router's choice (their weights from the
// scores as always), or null. Exposed for tests and for pagers' hints.
void route_token(const LayerParams& lp, const Config& c, int32_t token, const float* logits, float* scores,
                 float* biased, int32_t* idx, float* weights, const int32_t* forced = nullptr);

}  // namespace moepage::ds4
