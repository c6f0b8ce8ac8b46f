#include "deepseek4/model/tensor_names.hpp"

#include "checkpoint/dequantize.hpp"
#include "checkpoint/safetensors_header.hpp"

namespace moepage::ds4 {
namespace {

using ckpt::CheckpointError;
using R = TensorRole;

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string layer_prefix(uint32_t layer) { return "layers." + std::to_string(layer) + "."; }

std::vector<TensorSpec> global_tensor_specs(const Config& c) {
  const uint64_t D = c.hidden_size, N = c.hc_mult, V = c.vocab_size;
  std::vector<TensorSpec> s = {
      {"embed.weight", {V, D}, R::Bf16}, {"norm.weight", {D}, R::Bf16},  {"hc_head_fn", {N, N * D}, R::F32},
      {"hc_head_base", {N}, R::F32},     {"hc_head_scale", {1}, R::F32},
  };
  if (!c.tie_word_embeddings) s.push_back({"head.weight", {V, D}, R::Bf16});
  return s;
}

std::vector<TensorSpec> layer_dense_specs(const Config& c, uint32_t layer) {
  const uint64_t D = c.hidden_size, N = c.hc_mult, H = c.num_attention_heads, hd = c.head_dim;
  const uint64_t ql = c.q_lora_rank, og = c.o_groups, ol = c.o_lora_rank, E = c.n_routed_experts;
  const uint64_t I = c.moe_intermediate_size, mix = (2 + N) * N;
  const std::string p = layer_prefix(layer);
  std::vector<TensorSpec> s = {
      {p + "hc_attn_fn", {mix, N * D}, R::F32},
      {p + "hc_attn_base", {mix}, R::F32},
      {p + "hc_attn_scale", {3}, R::F32},
      {p + "hc_ffn_fn", {mix, N * D}, R::F32},
      {p + "hc_ffn_base", {mix}, R::F32},
      {p + "hc_ffn_scale", {3}, R::F32},
      {p + "attn_norm.weight", {D}, R::Bf16},
      {p + "ffn_norm.weight", {D}, R::Bf16},
      {p + "attn.wq_a.weight", {ql, D}, R::Projection},
      {p + "attn.q_norm.weight", {ql}, R::Bf16},
      {p + "attn.wq_b.weight", {H * hd, ql}, R::Projection},
      {p + "attn.wkv.weight", {hd, D}, R::Projection},
      {p + "attn.kv_norm.weight", {hd}, R::Bf16},
      {p + "attn.wo_a.weight", {og * ol, H * hd / og}, R::Projection},
      {p + "attn.wo_b.weight", {D, og * ol}, R::Projection},
      {p + "attn.attn_sink", {H}, R::F32},
  };
  const AttnKind kind = c.layer_types.at(layer);
  if (kind != AttnKind::Sliding) {
    const uint64_t coff = kind == AttnKind::CSA ? 2 : 1;  // CSA windows overlap: two feature series
    const uint64_t ratio = c.compress_rate(layer);
    s.push_back({p + "attn.compressor.wkv.weight", {coff * hd, D}, R::Bf16});
    s.push_back({p + "attn.compressor.wgate.weight", {coff * hd, D}, R::Bf16});
    s.push_back({p + "attn.compressor.ape", {ratio, coff * hd}, R::F32});
    s.push_back({p + "attn.compressor.norm.weight", {hd}, R::Bf16});
  }
  if (kind == AttnKind::CSA) {
    const uint64_t ih = c.index_n_heads, id = c.index_head_dim, ratio = c.compress_rate_csa;
    s.push_back({p + "attn.indexer.wq_b.weight", {ih * id, ql}, R::Projection});
    s.push_back({p + "attn.indexer.weights_proj.weight", {ih, D}, R::Bf16});
    s.push_back({p + "attn.indexer.compressor.wkv.weight", {2 * id, D}, R::Bf16});
    s.push_back({p + "attn.indexer.compressor.wgate.weight", {2 * id, D}, R::Bf16});
    s.push_back({p + "attn.indexer.compressor.ape", {ratio, 2 * id}, R::F32});
    s.push_back({p + "attn.indexer.compressor.norm.weight", {id}, R::Bf16});
  }
  s.push_back({p + "ffn.gate.weight", {E, D}, R::Bf16});
  if (c.mlp_layer_types.at(layer) == MlpKind::HashMoe) {
    s.push_back({p + "ffn.gate.tid2eid", {c.vocab_size, c.num_experts_per_tok}, R::I64});
  } else {
    s.push_back({p + "ffn.gate.bias", {E}, R::F32});
  }
  s.push_back({p + "ffn.shared_experts.w1.weight", {I, D}, R::Projection});
  s.push_back({p + "ffn.shared_experts.w3.weight", {I, D}, R::Projection});
  s.push_back({p + "ffn.shared_experts.w2.weight", {D, I}, R::Projection});
  return s;
}

std::vector<TensorSpec> expert_specs(const Config& c, uint32_t layer, uint32_t expert) {
  const uint64_t D = c.hidden_size, I = c.moe_intermediate_size;
  const std::string p = layer_prefix(layer) + "ffn.experts." + std::to_string(expert) + ".";
  return {
      {p + "w1.weight", {I, D}, R::Expert}, {p + "w3.weight", {I, D}, R::Expert}, {p + "w2.weight", {D, I}, R::Expert}};
}

std::vector<std::string> spelling_candidates(std::string_view released, Spelling spelling) {
  const std::string r(released);
  if (spelling == Spelling::Released) return {r};
  if (r == "embed.weight") return {"model.embed_tokens.weight", "model.embed.weight"};
  if (r == "head.weight") return {"head.weight", "lm_head.weight", "model.head.weight"};
  if (r == "norm.weight") return {"model.norm.weight"};
  if (r.starts_with("hc_head_")) return {"model.hc_head.hc_" + r.substr(8), "model." + r};
  if (r.starts_with("layers.")) {
    if (r.ends_with(".attn.kv_norm.weight")) {
      const std::string base = r.substr(0, r.size() - std::string_view("kv_norm.weight").size());
      return {"model." + base + "norm.weight", "model." + r};
    }
    return {"model." + r};
  }
  return {"model." + r, r};
}

std::string spell(std::string_view released, Spelling spelling) {
  return spelling_candidates(released, spelling).front();
}

TensorResolver::TensorResolver(const ckpt::Checkpoint& ck) : ck_(&ck) {
  if (ck.find("embed.weight")) {
    spelling_ = Spelling::Released;
  } else if (ck.find("model.embed_tokens.weight")) {
    spelling_ = Spelling::SavePretrained;
  } else {
    spelling_ = Spelling::Released;
    for (const auto& t : ck.tensors()) {
      if (t.name.starts_with("model.layers.")) {
        spelling_ = Spelling::SavePretrained;
        break;
      }
    }
  }
}

const ckpt::TensorInfo* TensorResolver::find(std::string_view released) const {
  for (const auto& name : spelling_candidates(released, spelling_)) {
    if (const auto* t = ck_->find(name)) return t;
  }
  return nullptr;
}

const ckpt::TensorInfo& TensorResolver::require(std::string_view released, std::string_view why) const {
  if (const auto* t = find(released)) return *t;
  throw CheckpointError(ck_->dir().string() + ": missing tensor '" + spell(released, spelling_) + "' required by " +
                        std::string(why) +
                        (spelling_ == Spelling::Released ? " (released spelling)" : " (save_pretrained spelling)"));
}

const ckpt::TensorInfo* TensorResolver::find_scale(std::string_view released_weight) const {
  return find(ckpt::scale_name_for(released_weight));
}

void TensorResolver::check_spec(const TensorSpec& spec) const {
  const ckpt::TensorInfo& t = require(spec.name);
  const auto fail = [&](const std::string& what) {
    throw CheckpointError(t.file_path.string() + ": tensor '" + t.name + "': " + what);
  };
  const std::string want = ckpt::shape_to_string(spec.shape);
  const std::string got = std::string(dtype_name(t.dtype)) + " " + ckpt::shape_to_string(t.shape);
  const auto need_scale = [&](const std::vector<uint64_t>& scale_shape, const char* what) {
    const ckpt::TensorInfo* s = find_scale(spec.name);
    if (!s)
      fail(std::string(dtype_name(t.dtype)) + " weight has no scale tensor '" +
           spell(ckpt::scale_name_for(spec.name), spelling_) + "'");
    if (s->dtype != Dtype::F8_E8M0 && !(s->dtype == Dtype::F32 && t.dtype == Dtype::F8_E4M3)) {
      fail("scale '" + s->name + "' is " + std::string(dtype_name(s->dtype)) + ", expected F8_E8M0");
    }
    if (s->shape != scale_shape) {
      fail("scale '" + s->name + "' has shape " + ckpt::shape_to_string(s->shape) + ", expected " +
           ckpt::shape_to_string(scale_shape) + " (" + what + ")");
    }
  };
  switch (spec.role) {
    case TensorRole::F32:
      if (t.dtype != Dtype::F32 || t.shape != spec.shape) fail("is " + got + ", expected F32 " + want);
      return;
    case TensorRole::I64:
      if (t.dtype != Dtype::I64 || t.shape != spec.shape) fail("is " + got + ", expected I64 " + want);
      return;
    case TensorRole::Bf16:
      // The release stores these as BF16; F32/F16 checkpoints (e.g. from save_pretrained) load too.
      if ((t.dtype != Dtype::BF16 && t.dtype != Dtype::F32 && t.dtype != Dtype::F16) || t.shape != spec.shape) {
        fail("is " + got + ", expected BF16 (or F16/F32) " + want);
      }
      return;
    case TensorRole::Projection:
    case TensorRole::Expert: {
      const uint64_t rows = spec.shape[0], cols = spec.shape[1];
      if (t.dtype == Dtype::F8_E4M3) {
        if (t.shape != spec.shape) fail("is " + got + ", expected F8_E4M3 " + want);
        need_scale({ceil_div(rows, 128), ceil_div(cols, 128)}, "128x128 blocks");
      } else if (t.dtype == Dtype::I8) {
        const std::vector<uint64_t> stored{rows, cols / 2};
        if (cols % 32 != 0 || t.shape != stored) {
          fail("is " + got + ", expected FP4 as I8 " + ckpt::shape_to_string(stored) + " (logical " + want + ")");
        }
        need_scale({rows, cols / 32}, "one per 32 inputs");
      } else if (t.dtype == Dtype::BF16 || t.dtype == Dtype::F16 || t.dtype == Dtype::F32) {
        if (t.shape != spec.shape) fail("is " + got + ", expected " + want);
      } else {
        fail("is " + got + ", expected an FP8, FP4 (I8) or float weight " + want);
      }
      return;
    }
  }
}

void TensorResolver::check_required(const Config& c) const {
  for (const auto& spec : global_tensor_specs(c)) check_spec(spec);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    for (const auto& spec : layer_dense_specs(c, l)) check_spec(spec);
    for (uint32_t e = 0; e < c.n_routed_experts; ++e) {
      for (const auto& spec : expert_specs(c, l, e)) check_spec(spec);
    }
  }
}

}  // namespace moepage::ds4
