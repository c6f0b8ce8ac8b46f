#include "deepseek4/forward/bind_weights.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace moepage::ds4 {
namespace {

WeightRef ref(const TensorResolver& r, const ckpt::TensorInfo& t, const std::string& released) {
  WeightRef w;
  w.dtype = t.dtype;
  for (uint64_t d : t.shape) w.shape.push_back(int64_t(d));
  w.data = reinterpret_cast<const std::byte*>(r.checkpoint().view(t).data());
  w.name = t.name;
  if (const ckpt::TensorInfo* s = r.find_scale(released)) {
    if (s->dtype != Dtype::F8_E8M0)
      throw std::invalid_argument(s->file_path.string() + ": tensor '" + s->name + "' is " +
                                  std::string(dtype_name(s->dtype)) + "; the CPU kernels read F8_E8M0 scales only");
    w.scale = reinterpret_cast<const std::byte*>(r.checkpoint().view(*s).data());
  }
  return w;
}

WeightRef required(const TensorResolver& r, const std::string& released) {
  return ref(r, r.require(released), released);
}

WeightRef optional(const TensorResolver& r, const std::string& released) {
  const ckpt::TensorInfo* t = r.find(released);
  return t ? ref(r, *t, released) : WeightRef{};
}

CompressorWeights compressor(const TensorResolver& r, const std::string& prefix) {
  return {required(r, prefix + "wkv.weight"), required(r, prefix + "wgate.weight"), required(r, prefix + "ape"),
          required(r, prefix + "norm.weight")};
}

}  // namespace

Weights bind_weights(const TensorResolver& r, const Config& c) {
  Weights w;
  w.embed = required(r, "embed.weight");
  w.head = required(r, "head.weight");
  w.norm = required(r, "norm.weight");
  w.hc_head_fn = required(r, "hc_head_fn");
  w.hc_head_base = required(r, "hc_head_base");
  w.hc_head_scale = required(r, "hc_head_scale");
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = layer_prefix(l);
    LayerWeights lw;
    lw.hc_attn_fn = required(r, p + "hc_attn_fn");
    lw.hc_attn_base = required(r, p + "hc_attn_base");
    lw.hc_attn_scale = required(r, p + "hc_attn_scale");
    lw.hc_ffn_fn = required(r, p + "hc_ffn_fn");
    lw.hc_ffn_base = required(r, p + "hc_ffn_base");
    lw.hc_ffn_scale = required(r, p + "hc_ffn_scale");
    lw.attn_norm = required(r, p + "attn_norm.weight");
    lw.ffn_norm = required(r, p + "ffn_norm.weight");
    lw.wq_a = required(r, p + "attn.wq_a.weight");
    lw.q_norm = required(r, p + "attn.q_norm.weight");
    lw.wq_b = required(r, p + "attn.wq_b.weight");
    lw.wkv = required(r, p + "attn.wkv.weight");
    lw.kv_norm = required(r, p + "attn.kv_norm.weight");
    lw.wo_a = required(r, p + "attn.wo_a.weight");
    lw.wo_b = required(r, p + "attn.wo_b.weight");
    lw.attn_sink = required(r, p + "attn.attn_sink");
    if (c.layer_types[l] != AttnKind::Sliding) lw.compressor = compressor(r, p + "attn.compressor.");
    if (c.layer_types[l] == AttnKind::CSA) {
      lw.indexer_compressor = compressor(r, p + "attn.indexer.compressor.");
      lw.indexer_wq_b = required(r, p + "attn.indexer.wq_b.weight");
      lw.indexer_weights_proj = required(r, p + "attn.indexer.weights_proj.weight");
    }
    lw.gate = required(r, p + "ffn.gate.weight");
    if (c.mlp_layer_types[l] == MlpKind::HashMoe) lw.tid2eid = required(r, p + "ffn.gate.tid2eid");
    else lw.gate_bias = optional(r, p + "ffn.gate.bias");
    lw.shared_w1 = required(r, p + "ffn.shared_experts.w1.weight");
    lw.shared_w2 = required(r, p + "ffn.shared_experts.w2.weight");
    lw.shared_w3 = required(r, p + "ffn.shared_experts.w3.weight");
    w.layers.push_back(std::move(lw));
  }
  return w;
}

ExpertLayout expert_layout(const ExpertCatalog& cat, const Config& c) {
  ExpertLayout l;
  l.hidden = c.hidden_size;
  l.intermediate = c.moe_intermediate_size;
  l.slot_bytes = cat.expert_bytes();
  const auto& names = cat.part_names();
  auto fill = [&](ExpertPart& part, const std::string& w) {
    for (uint32_t p = 0; p < names.size(); ++p) {
      if (names[p] == w) {
        part.dtype = cat.segment(0, 0, p).dtype;
        part.offset = cat.part_offsets()[p];
      } else if (names[p] == w + ".scale") {
        if (cat.segment(0, 0, p).dtype != Dtype::F8_E8M0)
          throw std::invalid_argument("expert " + w + " scales are " +
                                      std::string(dtype_name(cat.segment(0, 0, p).dtype)) +
                                      "; the CPU kernels read F8_E8M0 scales only");
        part.has_scale = true;
        part.scale_offset = cat.part_offsets()[p];
      }
    }
  };
  fill(l.w1, "w1");
  fill(l.w3, "w3");
  fill(l.w2, "w2");
  return l;
}

std::unique_ptr<ResidentExpertSource> load_resident_experts(const TensorResolver& r, const ExpertCatalog& cat,
                                                            const Config& c) {
  const ExpertLayout layout = expert_layout(cat, c);
  auto source = std::make_unique<ResidentExpertSource>(layout, c.num_hidden_layers, c.n_routed_experts);
  const auto& names = cat.part_names();
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l)
    for (uint32_t e = 0; e < c.n_routed_experts; ++e) {
      std::byte* slot = source->slot(l, e);
      const std::string prefix = layer_prefix(l) + "ffn.experts." + std::to_string(e) + ".";
      for (uint32_t p = 0; p < names.size(); ++p) {
        const bool is_scale = names[p].size() > 6 && names[p].ends_with(".scale");
        const std::string weight = prefix + (is_scale ? names[p].substr(0, names[p].size() - 6) : names[p]) + ".weight";
        const ckpt::TensorInfo* t = is_scale ? r.find_scale(weight) : &r.require(weight);
        if (!t) throw std::invalid_argument("expert scale of '" + weight + "' vanished after cataloguing");
        // Straight into the slot: a view would keep a second copy of every expert.
        r.checkpoint().read(*t, {reinterpret_cast<uint8_t*>(slot + cat.part_offsets()[p]), t->nbytes});
      }
    }
  return source;
}

}  // namespace moepage::ds4
