#include "deepseek4/forward/indexer.hpp"

#include <algorithm>
#include <cmath>

#include "deepseek4/cpu/gemm.hpp"
#include "deepseek4/cpu/ops.hpp"
#include "deepseek4/forward/compressor.hpp"

namespace moepage::ds4 {

void indexer_compress(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, LayerState& st, int64_t p0,
                      int64_t S, const float* xn, Scratch& sc) {
  const CompressorParams& p = lp.index_comp;
  cpu::matmul(pool, p.wkv, xn, c.hidden_size, sc.idx_kv.data(), p.width, S);
  cpu::matmul(pool, p.wgate, xn, c.hidden_size, sc.idx_gate.data(), p.width, S);
  for (int64_t s = 0; s < S; ++s)
    compressor_push(p, *lp.rope, c.rms_norm_eps, p0 + s, sc.idx_kv.data() + s * p.width,
                    sc.idx_gate.data() + s * p.width, st.index_comp, sc.comp_tmp.data());
}

void indexer_select(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, const LayerState& st, int64_t p0,
                    int64_t S, const float* q_lat, const float* xn, Scratch& sc) {
  const int64_t ratio = lp.index_comp.ratio, topk = c.index_topk;
  const int64_t nh = c.index_n_heads, ihd = c.index_head_dim, rope = c.qk_rope_head_dim;
  // Queries that see no more entries than top-k keep them all: no scores needed.
  bool any_scored = false;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t visible = (p0 + s + 1) / ratio;
    int32_t* sel = sc.sel.data() + s * topk;
    if (visible <= topk) {
      for (int64_t w = 0; w < visible; ++w) sel[w] = int32_t(w);
      sc.n_sel[size_t(s)] = int32_t(visible);
    } else {
      any_scored = true;
    }
  }
  if (!any_scored) return;

  cpu::matmul(pool, lp.index_wq_b, q_lat, c.q_lora_rank, sc.idx_q.data(), nh * ihd, S);
  cpu::matmul(pool, lp.index_weights_proj, xn, c.hidden_size, sc.idx_w.data(), nh, S);
  const float head_scale = float(1.0 / std::sqrt(double(nh)));
  const double score_scale = 1.0 / std::sqrt(double(ihd));
  pool.parallel_for(S, [&](int64_t b, int64_t e, unsigned worker) {
    float* scores = sc.idx_scores.data() + worker * sc.idx_scores_stride;
    float cs[cpu::kMaxRopeDim / 2], sn[cpu::kMaxRopeDim / 2];
    for (int64_t s = b; s < e; ++s) {
      const int64_t pos = p0 + s, visible = (pos + 1) / ratio;
      if (visible <= topk) continue;
      float* q = sc.idx_q.data() + s * nh * ihd;
      lp.rope->angles(pos, cs, sn);
      for (int64_t h = 0; h < nh; ++h) lp.rope->rotate(q + h * ihd + ihd - rope, cs, sn, false);
      const float* wts = sc.idx_w.data() + s * nh;
      for (int64_t w = 0; w < visible; ++w) {
        const float* key = st.index_comp.entries.data() + w * ihd;
        double acc = 0;
        for (int64_t h = 0; h < nh; ++h) {
          const float* qh = q + h * ihd;
          double d = 0;
          for (int64_t i = 0; i < ihd; ++i) d += double(qh[i]) * double(key[i]);
          if (d > 0) acc += double(wts[h] * head_scale) * d * score_scale;
        }
        scores[w] = float(acc);
      }
      int32_t* sel = sc.sel.data() + s * topk;
      cpu::top_k(scores, visible, topk, sel);
      std::sort(sel, sel + topk);
      sc.n_sel[size_t(s)] = int32_t(topk);
    }
  });
}

}  // namespace moepage::ds4
