#include "deepseek4/forward/attention.hpp"

#include <algorithm>
#include <cmath>

#include "deepseek4/cpu/gemm.hpp"
#include "deepseek4/cpu/ops.hpp"
#include "deepseek4/forward/compressor.hpp"
#include "deepseek4/forward/indexer.hpp"

namespace moepage::ds4 {
namespace {

inline double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return s;
}

// Q, the shared KV head (into the ring) and the main compressor, for the whole batch.
void project_qkv(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, LayerState& st, int64_t ring_size,
                 int64_t p0, int64_t S, const float* xn, Scratch& sc) {
  const int64_t D = c.hidden_size, H = c.num_attention_heads, hd = c.head_dim, ql = c.q_lora_rank;
  const int64_t rope = c.qk_rope_head_dim, half = rope / 2;
  for (int64_t s = 0; s < S; ++s) lp.rope->angles(p0 + s, sc.cos.data() + s * half, sc.sin.data() + s * half);

  cpu::matmul(pool, lp.wq_a, xn, D, sc.q_lat.data(), ql, S);
  for (int64_t s = 0; s < S; ++s)
    cpu::rms_norm(sc.q_lat.data() + s * ql, ql, lp.q_norm.data(), c.rms_norm_eps, sc.q_lat.data() + s * ql);
  cpu::matmul(pool, lp.wq_b, sc.q_lat.data(), ql, sc.q.data(), H * hd, S);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h) {
      float* qh = sc.q.data() + (s * H + h) * hd;
      cpu::rms_norm(qh, hd, nullptr, c.rms_norm_eps, qh);
      lp.rope->rotate(qh + hd - rope, sc.cos.data() + s * half, sc.sin.data() + s * half, false);
    }

  cpu::matmul(pool, lp.wkv, xn, D, sc.kv.data(), hd, S);
  for (int64_t s = 0; s < S; ++s) {
    float* kv = sc.kv.data() + s * hd;
    cpu::rms_norm(kv, hd, lp.kv_norm.data(), c.rms_norm_eps, kv);
    lp.rope->rotate(kv + hd - rope, sc.cos.data() + s * half, sc.sin.data() + s * half, false);
    std::copy(kv, kv + hd, st.ring.data() + ((p0 + s) % ring_size) * hd);
  }

  if (lp.kind == AttnKind::Sliding) return;
  const CompressorParams& cp = lp.comp;
  cpu::matmul(pool, cp.wkv, xn, D, sc.comp_kv.data(), cp.width, S);
  cpu::matmul(pool, cp.wgate, xn, D, sc.comp_gate.data(), cp.width, S);
  for (int64_t s = 0; s < S; ++s)
    compressor_push(cp, *lp.rope, c.rms_norm_eps, p0 + s, sc.comp_kv.data() + s * cp.width,
                    sc.comp_gate.data() + s * cp.width, st.comp, sc.comp_tmp.data());
}

// softmax over [logits..., sink] without the sink's column; returns the weights in place.
void softmax_with_sink(float* logits, int64_t n, double sink) {
  double m = sink;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, double(logits[i]));
  double den = std::exp(sink - m);
  for (int64_t i = 0; i < n; ++i) {
    const double e = std::exp(double(logits[i]) - m);
    logits[i] = float(e);
    den += e;
  }
  const double inv = 1.0 / den;
  for (int64_t i = 0; i < n; ++i) logits[i] = float(double(logits[i]) * inv);
}

}  // namespace

void attention(cpu::ThreadPool& pool, const LayerParams& lp, const Config& c, LayerState& st, int64_t ring_size,
               int64_t p0, int64_t S, const float* xn, Scratch& sc, float* out) {
  const int64_t H = c.num_attention_heads, hd = c.head_dim, W = c.sliding_window;
  const int64_t rope = c.qk_rope_head_dim, half = rope / 2;
  project_qkv(pool, lp, c, st, ring_size, p0, S, xn, sc);
  if (lp.kind == AttnKind::CSA) {
    indexer_compress(pool, lp, c, st, p0, S, xn, sc);
    indexer_select(pool, lp, c, st, p0, S, sc.q_lat.data(), xn, sc);
  }

  const double scale = 1.0 / std::sqrt(double(hd));
  const int64_t topk = c.index_topk;
  pool.parallel_for(S * H, [&](int64_t b, int64_t e, unsigned worker) {
    float* logits = sc.attn_logits.data() + worker * sc.attn_logits_stride;
    for (int64_t item = b; item < e; ++item) {
      const int64_t s = item / H, h = item % H, pos = p0 + s;
      const float* q = sc.q.data() + item * hd;
      const int64_t first = std::max<int64_t>(0, pos - W + 1), n_slide = pos - first + 1;
      // Compressed entries this query sees: all closed windows (HCA) or the indexer's pick (CSA).
      const int32_t* picked = nullptr;
      int64_t n_comp = 0;
      if (lp.kind == AttnKind::HCA) {
        n_comp = (pos + 1) / lp.comp.ratio;
      } else if (lp.kind == AttnKind::CSA) {
        picked = sc.sel.data() + s * topk;
        n_comp = sc.n_sel[size_t(s)];
      }
      auto comp_key = [&](int64_t i) { return st.comp.entries.data() + (picked ? picked[i] : i) * hd; };
      for (int64_t i = 0; i < n_slide; ++i)
        logits[i] = float(dot(q, st.ring.data() + ((first + i) % ring_size) * hd, hd) * scale);
      for (int64_t i = 0; i < n_comp; ++i) logits[n_slide + i] = float(dot(q, comp_key(i), hd) * scale);
      softmax_with_sink(logits, n_slide + n_comp, lp.sink[size_t(h)]);

      float* o = sc.attn_out.data() + item * hd;
      std::fill(o, o + hd, 0.0f);
      for (int64_t i = 0; i < n_slide; ++i)
        cpu::axpy(logits[i], st.ring.data() + ((first + i) % ring_size) * hd, hd, o);
      for (int64_t i = 0; i < n_comp; ++i) cpu::axpy(logits[n_slide + i], comp_key(i), hd, o);
      // V = K carried rotary phase: rotate the output's rope slice back by the query's angle.
      lp.rope->rotate(o + hd - rope, sc.cos.data() + s * half, sc.sin.data() + s * half, true);
    }
  });

  // Grouped low-rank output projection: group g of the heads' outputs through rows
  // [g*o_lora, (g+1)*o_lora) of wo_a, then wo_b over all groups.
  const int64_t G = c.o_groups, ol = c.o_lora_rank, group_in = H * hd / G;
  for (int64_t g = 0; g < G; ++g)
    cpu::matmul(pool, lp.wo_a.row_band(g * ol, ol), sc.attn_out.data() + g * group_in, H * hd, sc.oa.data() + g * ol,
                G * ol, S);
  cpu::matmul(pool, lp.wo_b, sc.oa.data(), G * ol, out, c.hidden_size, S);
}

}  // namespace moepage::ds4
