#include "deepseek4/forward/moe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "deepseek4/cpu/gemm.hpp"
#include "deepseek4/cpu/ops.hpp"

namespace moepage::ds4 {
namespace {

cpu::Scoring scoring_of(ScoringFunc f) {
  switch (f) {
    case ScoringFunc::Sigmoid: return cpu::Scoring::Sigmoid;
    case ScoringFunc::Softmax: return cpu::Scoring::Softmax;
    default: return cpu::Scoring::SqrtSoftplus;
  }
}

cpu::MatRef part(const ExpertPart& p, const std::byte* slot, int64_t rows, int64_t cols) {
  return cpu::MatRef{p.dtype, rows, cols, slot + p.offset, p.has_scale ? slot + p.scale_offset : nullptr};
}

// SwiGLU MLP on S rows of x (ld D) into y (ld D): w2(swiglu(w1 x, w3 x)).
void mlp(cpu::ThreadPool& pool, const cpu::MatRef& w1, const cpu::MatRef& w3, const cpu::MatRef& w2, const Config& c,
         const float* x, int64_t S, Scratch& sc, float* y) {
  const int64_t D = c.hidden_size, I = c.moe_intermediate_size;
  cpu::matmul(pool, w1, x, D, sc.ex_h1.data(), I, S);
  cpu::matmul(pool, w3, x, D, sc.ex_h3.data(), I, S);
  cpu::swiglu_clamped(sc.ex_h1.data(), sc.ex_h3.data(), S * I, float(c.swiglu_limit), sc.ex_h1.data());
  cpu::matmul(pool, w2, sc.ex_h1.data(), I, y, D, S);
}

// A NaN or Inf score would pick experts by the quirks of the comparisons in top-k and weight them
// with NaN: the output is wrong with no sign. The scores (and the biased ones that choose) must
// be finite; the check costs 2E comparisons per token and layer.
void check_finite_scores(uint32_t layer, int64_t position, int32_t token, const float* scores, const float* biased,
                         int64_t E) {
  for (int64_t e = 0; e < E; ++e) {
    const float bad = !std::isfinite(scores[e]) ? scores[e] : (biased && !std::isfinite(biased[e])) ? biased[e] : 0.0f;
    if (bad == 0.0f) continue;
    throw std::runtime_error("router of layer " + std::to_string(layer) + ": token " + std::to_string(position) +
                             " of the batch (id " + std::to_string(token) + ") has a non-finite " +
                             (std::isfinite(scores[e]) ? "biased score " : "score ") + std::to_string(bad) +
                             " for expert " + std::to_string(e));
  }
}

}  // namespace

void route_token(const LayerParams& lp, const Config& c, int32_t token, const float* logits, float* scores,
                 float* biased, int32_t* idx, float* weights, const int32_t* forced) {
  const int64_t E = c.n_routed_experts, k = c.num_experts_per_tok;
  cpu::router_scores(logits, E, scoring_of(c.scoring_func), scores);
  if (forced) {
    std::copy_n(forced, k, idx);
    // The biased scores are still formed: the non-finite check reads them on scored layers.
    if (lp.mlp != MlpKind::HashMoe)
      for (int64_t e = 0; e < E; ++e) biased[e] = scores[e] + lp.gate_bias[size_t(e)];
  } else if (lp.mlp == MlpKind::HashMoe) {
    std::copy_n(lp.tid2eid.data() + int64_t(token) * k, k, idx);
  } else {
    // The bias picks the experts; the weights come from the unbiased scores.
    for (int64_t e = 0; e < E; ++e) biased[e] = scores[e] + lp.gate_bias[size_t(e)];
    cpu::top_k(biased, E, k, idx);
  }
  double sum = 0;
  for (int64_t j = 0; j < k; ++j) sum += scores[idx[j]];
  const double scale = c.routed_scaling_factor / (sum + 1e-20);
  for (int64_t j = 0; j < k; ++j) weights[j] = float(double(scores[idx[j]]) * scale);
}

namespace {

void moe_block(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, uint32_t layer, const int32_t* tokens,
               int64_t S, const float* yn, ExpertSource& source, const ExpertLayout& layout, Scratch& sc, float* out,
               MoeStats& stats, const int32_t* forced, const ExpertParallel* ep) {
  const int64_t D = c.hidden_size, I = c.moe_intermediate_size, E = c.n_routed_experts;
  const int64_t k = c.num_experts_per_tok;
  cpu::matmul(pool, lp.gate, yn, D, sc.router_logits.data(), E, S);
  for (int64_t s = 0; s < S; ++s) {
    route_token(lp, c, tokens[s], sc.router_logits.data() + s * E, sc.router_scores.data() + s * E,
                sc.router_biased.data(), sc.route_idx.data() + s * k, sc.route_w.data() + s * k,
                forced ? forced + s * k : nullptr);
    check_finite_scores(layer, s, tokens[s], sc.router_scores.data() + s * E,
                        lp.mlp == MlpKind::HashMoe ? nullptr : sc.router_biased.data(), E);
  }

  // Group the (token, weight) pairs by expert (counting sort), experts in ascending id order.
  std::fill(sc.expert_count.begin(), sc.expert_count.end(), 0);
  for (int64_t i = 0; i < S * k; ++i) ++sc.expert_count[size_t(sc.route_idx[size_t(i)])];
  int32_t n_used = 0;
  sc.expert_start[0] = 0;
  for (int64_t e = 0; e < E; ++e) {
    sc.expert_start[size_t(e + 1)] = sc.expert_start[size_t(e)] + sc.expert_count[size_t(e)];
    if (sc.expert_count[size_t(e)]) sc.experts_used[size_t(n_used++)] = int32_t(e);
    sc.expert_count[size_t(e)] = 0;  // reused as the fill cursor
  }
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = sc.route_idx[size_t(s * k + j)];
      const int32_t at = sc.expert_start[size_t(e)] + sc.expert_count[size_t(e)]++;
      sc.expert_tokens[size_t(at)] = int32_t(s);
      sc.expert_weights[size_t(at)] = sc.route_w[size_t(s * k + j)];
    }

  // Shared expert first: it writes `out`, the routed experts add to it. Of a rank group, rank 0
  // computes it and the others start from zero; each keeps only the experts it owns.
  if (!ep || ep->rank == 0) mlp(pool, lp.shared_w1, lp.shared_w3, lp.shared_w2, c, yn, S, sc, out);
  else std::fill(out, out + S * D, 0.0f);
  if (ep) {
    int32_t kept = 0;
    for (int32_t i = 0; i < n_used; ++i) {
      const int32_t e = sc.experts_used[size_t(i)];
      if (ep->ownership->owner(layer, uint32_t(e)) == ep->rank) sc.experts_used[size_t(kept++)] = e;
    }
    n_used = kept;
  }

  const uint32_t band = source.max_batch();
  if (band == 0) throw std::invalid_argument("moe: the expert source serves 0 experts per call");
  for (int32_t b0 = 0; b0 < n_used; b0 += int32_t(band)) {
    const uint32_t nb = uint32_t(std::min<int32_t>(int32_t(band), n_used - b0));
    source.acquire(layer, sc.experts_used.data() + b0, nb, sc.expert_slots.data());
    ++stats.acquires;
    const auto band_start = std::chrono::steady_clock::now();
    for (uint32_t i = 0; i < nb; ++i) {
      const int32_t e = sc.experts_used[size_t(b0 + i)];
      const std::byte* slot = sc.expert_slots[i];
      if (!slot)
        throw std::runtime_error("moe: layer " + std::to_string(layer) + " expert " + std::to_string(e) +
                                 ": the expert source returned no slot");
      const int32_t start = sc.expert_start[size_t(e)], cnt = sc.expert_start[size_t(e + 1)] - start;
      for (int32_t r = 0; r < cnt; ++r) {
        const float* src = yn + int64_t(sc.expert_tokens[size_t(start + r)]) * D;
        std::copy(src, src + D, sc.ex_x.data() + int64_t(r) * D);
      }
      mlp(pool, part(layout.w1, slot, I, D), part(layout.w3, slot, I, D), part(layout.w2, slot, D, I), c,
          sc.ex_x.data(), cnt, sc, sc.ex_out.data());
      for (int32_t r = 0; r < cnt; ++r)
        cpu::axpy(sc.expert_weights[size_t(start + r)], sc.ex_out.data() + int64_t(r) * D, D,
                  out + int64_t(sc.expert_tokens[size_t(start + r)]) * D);
      stats.routed_experts += uint64_t(cnt);
    }
    stats.routed_ns += uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - band_start).count());
  }
  if (ep) {
    const auto reduce_start = std::chrono::steady_clock::now();
    ep->collective->all_reduce_sum(out, uint64_t(S * D));
    ++stats.collective_calls;
    stats.collective_ns += uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - reduce_start).count());
  }
}

}  // namespace

void moe(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, uint32_t layer, const int32_t* tokens,
         int64_t S, const float* yn, ExpertSource& source, const ExpertLayout& layout, Scratch& sc, float* out,
         MoeStats& stats, const int32_t* forced, const ExpertParallel* ep) {
  if (!ep) {
    moe_block(pool, lp, c, layer, tokens, S, yn, source, layout, sc, out, stats, forced, nullptr);
    return;
  }
  try {
    moe_block(pool, lp, c, layer, tokens, S, yn, source, layout, sc, out, stats, forced, ep);
  } catch (const std::exception& e) {
    ep->collective->abort(std::string("layer ") + std::to_string(layer) + ": " + e.what());
    throw;
  }
}

}  // namespace moepage::ds4
