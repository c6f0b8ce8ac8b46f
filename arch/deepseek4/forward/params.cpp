#include "deepseek4/forward/params.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace moepage::ds4 {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

[[noreturn]] void fail(const WeightRef& w, const std::string& fallback, const std::string& what) {
  throw std::invalid_argument("ds4 weights: " + (w.name.empty() ? fallback : w.name) + ": " + what);
}

// A matrix of logical shape [rows, cols]; FP4 (I8) stores [rows, cols/2].
cpu::MatRef matrix(const WeightRef& w, const std::string& label, int64_t rows, int64_t cols) {
  if (!w.present()) fail(w, label, "missing");
  const std::vector<int64_t> want = {rows, w.dtype == Dtype::I8 ? cols / 2 : cols};
  if (w.shape != want)
    fail(w, label,
         "has shape " + shape_str(w.shape) + ", expected " + shape_str(want) +
             (w.dtype == Dtype::I8 ? " (FP4: two codes per byte)" : ""));
  cpu::MatRef m{w.dtype, rows, cols, w.data, w.scale};
  if (std::string err = cpu::check_matref(m); !err.empty()) fail(w, label, err);
  return m;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// A small float tensor of the given shape, copied out as floats.
std::vector<float> floats(const WeightRef& w, const std::string& label, std::vector<int64_t> shape) {
  if (!w.present()) fail(w, label, "missing");
  if (w.shape != shape && !(numel(w.shape) == numel(shape) && shape.size() == 1))
    fail(w, label, "has shape " + shape_str(w.shape) + ", expected " + shape_str(shape));
  const int64_t n = numel(shape);
  std::vector<float> out(static_cast<size_t>(n));
  switch (w.dtype) {
    case Dtype::F32:
    case Dtype::BF16:
    case Dtype::F16: {
      cpu::MatRef m{w.dtype, 1, n, w.data, nullptr};
      cpu::decode_row(m, 0, 0, n, out.data());
      return out;
    }
    default: fail(w, label, "dtype " + std::string(dtype_name(w.dtype)) + " where F32, BF16 or F16 was expected");
  }
}

HcParams hc(const WeightRef& fn, const WeightRef& base, const WeightRef& scale, const std::string& label, int64_t n_mix,
            int64_t n_in, int64_t n_scale) {
  HcParams p;
  p.fn = matrix(fn, label + "_fn", n_mix, n_in);
  p.base = floats(base, label + "_base", {n_mix});
  p.scale = floats(scale, label + "_scale", {n_scale});
  return p;
}

CompressorParams compressor(const CompressorWeights& w, const std::string& label, const Config& c, uint32_t ratio,
                            uint32_t dim, bool overlap) {
  CompressorParams p;
  p.ratio = ratio;
  p.dim = dim;
  p.overlap = overlap;
  p.width = overlap ? 2 * dim : dim;
  p.wkv = matrix(w.wkv, label + ".wkv", p.width, c.hidden_size);
  p.wgate = matrix(w.wgate, label + ".wgate", p.width, c.hidden_size);
  p.ape = floats(w.ape, label + ".ape", {ratio, p.width});
  p.norm = floats(w.norm, label + ".norm", {dim});
  return p;
}

}  // namespace

void validate_config(const Config& c) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("ds4 config: " + what); };
  if (c.layer_types.size() != c.num_hidden_layers || c.mlp_layer_types.size() != c.num_hidden_layers)
    bad("layer_types and mlp_layer_types must have num_hidden_layers entries");
  if (c.hidden_size == 0 || c.vocab_size == 0 || c.num_attention_heads == 0 || c.head_dim == 0)
    bad("hidden_size, vocab_size, num_attention_heads and head_dim must be positive");
  if (c.qk_rope_head_dim == 0 || c.qk_rope_head_dim % 2 || c.qk_rope_head_dim > c.head_dim)
    bad("qk_rope_head_dim must be even, positive and at most head_dim");
  if (c.o_groups == 0 || (uint64_t(c.num_attention_heads) * c.head_dim) % c.o_groups)
    bad("num_attention_heads * head_dim must be divisible by o_groups");
  if (c.hc_mult == 0 || c.hc_sinkhorn_iters == 0) bad("hc_mult and hc_sinkhorn_iters must be positive");
  if (c.num_experts_per_tok == 0 || c.num_experts_per_tok > c.n_routed_experts)
    bad("num_experts_per_tok must be in [1, n_routed_experts]");
  if (c.sliding_window == 0) bad("sliding_window must be positive");
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    if (c.layer_types[l] == AttnKind::Sliding) continue;
    if (c.compress_rate(l) == 0) bad("layer " + std::to_string(l) + " compresses with rate 0");
    if (c.layer_types[l] == AttnKind::CSA &&
        (c.index_topk == 0 || c.index_n_heads == 0 || c.qk_rope_head_dim > c.index_head_dim))
      bad("CSA layers need index_topk, index_n_heads > 0 and qk_rope_head_dim <= index_head_dim");
  }
}

ModelParams prepare_params(const Config& c, const Weights& w, const cpu::Rope& rope_main,
                           const cpu::Rope& rope_compress) {
  validate_config(c);
  if (w.layers.size() != c.num_hidden_layers)
    throw std::invalid_argument("ds4 weights: " + std::to_string(w.layers.size()) + " layers, config has " +
                                std::to_string(c.num_hidden_layers));
  const int64_t D = c.hidden_size, N = c.hc_mult, H = c.num_attention_heads, hd = c.head_dim;
  const int64_t n_mix = (2 + N) * N, E = c.n_routed_experts, I = c.moe_intermediate_size;
  ModelParams p;
  p.embed = matrix(w.embed, "embed", c.vocab_size, D);
  p.head = matrix(w.head, "head", c.vocab_size, D);
  p.norm = floats(w.norm, "norm", {D});
  p.hc_head = hc(w.hc_head_fn, w.hc_head_base, w.hc_head_scale, "hc_head", N, N * D, 1);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerWeights& lw = w.layers[l];
    const std::string L = "layers." + std::to_string(l) + ".";
    LayerParams lp;
    lp.kind = c.layer_types[l];
    lp.mlp = c.mlp_layer_types[l];
    lp.rope = lp.kind == AttnKind::Sliding ? &rope_main : &rope_compress;
    lp.hc_attn = hc(lw.hc_attn_fn, lw.hc_attn_base, lw.hc_attn_scale, L + "hc_attn", n_mix, N * D, 3);
    lp.hc_ffn = hc(lw.hc_ffn_fn, lw.hc_ffn_base, lw.hc_ffn_scale, L + "hc_ffn", n_mix, N * D, 3);
    lp.attn_norm = floats(lw.attn_norm, L + "attn_norm", {D});
    lp.ffn_norm = floats(lw.ffn_norm, L + "ffn_norm", {D});
    lp.wq_a = matrix(lw.wq_a, L + "attn.wq_a", c.q_lora_rank, D);
    lp.q_norm = floats(lw.q_norm, L + "attn.q_norm", {c.q_lora_rank});
    lp.wq_b = matrix(lw.wq_b, L + "attn.wq_b", H * hd, c.q_lora_rank);
    lp.wkv = matrix(lw.wkv, L + "attn.wkv", hd, D);
    lp.kv_norm = floats(lw.kv_norm, L + "attn.kv_norm", {hd});
    lp.wo_a = matrix(lw.wo_a, L + "attn.wo_a", int64_t(c.o_groups) * c.o_lora_rank, H * hd / c.o_groups);
    lp.wo_b = matrix(lw.wo_b, L + "attn.wo_b", D, int64_t(c.o_groups) * c.o_lora_rank);
    lp.sink = floats(lw.attn_sink, L + "attn.attn_sink", {H});
    if (lp.kind != AttnKind::Sliding) {
      const bool csa = lp.kind == AttnKind::CSA;
      lp.comp = compressor(lw.compressor, L + "attn.compressor", c, c.compress_rate(l), c.head_dim, csa);
      if (csa) {
        lp.index_comp = compressor(lw.indexer_compressor, L + "attn.indexer.compressor", c, c.compress_rate(l),
                                   c.index_head_dim, true);
        lp.index_wq_b = matrix(lw.indexer_wq_b, L + "attn.indexer.wq_b", int64_t(c.index_n_heads) * c.index_head_dim,
                               c.q_lora_rank);
        lp.index_weights_proj = matrix(lw.indexer_weights_proj, L + "attn.indexer.weights_proj", c.index_n_heads, D);
      }
    }
    lp.gate = matrix(lw.gate, L + "ffn.gate", E, D);
    if (lp.mlp == MlpKind::HashMoe) {
      const WeightRef& t = lw.tid2eid;
      const std::vector<int64_t> want = {c.vocab_size, c.num_experts_per_tok};
      if (!t.present()) fail(t, L + "ffn.gate.tid2eid", "missing (hash-routed layer)");
      if (t.shape != want)
        fail(t, L + "ffn.gate.tid2eid", "has shape " + shape_str(t.shape) + ", expected " + shape_str(want));
      if (t.dtype != Dtype::I64 && t.dtype != Dtype::I32) fail(t, L + "ffn.gate.tid2eid", "must be I64 or I32");
      lp.tid2eid.resize(size_t(c.vocab_size) * c.num_experts_per_tok);
      for (size_t i = 0; i < lp.tid2eid.size(); ++i) {
        int64_t v;
        if (t.dtype == Dtype::I64) std::memcpy(&v, t.data + i * 8, 8);
        else {
          int32_t v32;
          std::memcpy(&v32, t.data + i * 4, 4);
          v = v32;
        }
        if (v < 0 || v >= E)
          fail(t, L + "ffn.gate.tid2eid",
               "entry " + std::to_string(i) + " is expert " + std::to_string(v) + ", outside [0, " + std::to_string(E) +
                   ")");
        lp.tid2eid[i] = int32_t(v);
      }
    } else {
      lp.gate_bias =
          lw.gate_bias.present() ? floats(lw.gate_bias, L + "ffn.gate.bias", {E}) : std::vector<float>(size_t(E), 0.0f);
    }
    lp.shared_w1 = matrix(lw.shared_w1, L + "ffn.shared_experts.w1", I, D);
    lp.shared_w3 = matrix(lw.shared_w3, L + "ffn.shared_experts.w3", I, D);
    lp.shared_w2 = matrix(lw.shared_w2, L + "ffn.shared_experts.w2", D, I);
    p.layers.push_back(std::move(lp));
  }
  return p;
}

}  // namespace moepage::ds4
