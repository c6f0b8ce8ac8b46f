// What the MoE block's GPU tests share: a small two-layer config (a hash-routed layer, then a
// scored one), one layer's dense weights on the host and the device, and random experts.
#pragma once
#include <cstring>

#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/forward/moe.hpp"
#include "deepseek4/hip/device_params.hpp"
#include "kernel_test_support.hpp"

namespace moepage::ds4::gpu::test {

inline Config moe_config(ScoringFunc scoring, int64_t hidden = 128, int64_t intermediate = 96) {
  Config c;
  c.vocab_size = 50;
  c.hidden_size = uint32_t(hidden);
  c.moe_intermediate_size = uint32_t(intermediate);
  c.num_hidden_layers = 2;
  c.n_routed_experts = 16;
  c.num_experts_per_tok = 4;
  c.scoring_func = scoring;
  c.routed_scaling_factor = 1.5;
  c.swiglu_limit = 10.0;
  c.num_attention_heads = 2;
  c.head_dim = 16;
  c.q_lora_rank = 8;
  c.o_groups = 1;
  c.o_lora_rank = 8;
  c.index_n_heads = 2;
  c.index_head_dim = 8;
  c.index_topk = 2;
  c.layer_types = {AttnKind::Sliding, AttnKind::Sliding};
  c.mlp_layer_types = {MlpKind::HashMoe, MlpKind::Moe};
  return c;
}

// One MoE layer's dense weights on the host and their device twin.
struct MoeLayer {
  HostMat gate, w1, w3, w2;
  LayerParams cpu;
  gpu::GpuLayerParams dev;
  MoeLayer(Rng& rng, gpu::test::Device& d, const Config& c, MlpKind kind) {
    const int64_t D = c.hidden_size, I = c.moe_intermediate_size, E = c.n_routed_experts, k = c.num_experts_per_tok;
    gate = random_mat(rng, Dtype::BF16, E, D, 2.0f);
    w1 = random_mat(rng, Dtype::BF16, I, D);
    w3 = random_mat(rng, Dtype::BF16, I, D);
    w2 = random_mat(rng, Dtype::BF16, D, I);
    cpu.mlp = dev.mlp = kind;
    cpu.gate = gate.ref();
    cpu.shared_w1 = w1.ref();
    cpu.shared_w3 = w3.ref();
    cpu.shared_w2 = w2.ref();
    cpu.gate_bias = rng.floats(size_t(E), -0.3f, 0.3f);
    cpu.tid2eid.resize(size_t(c.vocab_size) * size_t(k));
    for (auto& e : cpu.tid2eid) e = rng.below(int32_t(E));  // rows may repeat an expert
    dev.gate = gate.on(d);
    dev.shared_w1 = w1.on(d);
    dev.shared_w3 = w3.on(d);
    dev.shared_w2 = w2.on(d);
    dev.gate_bias = d.put(cpu.gate_bias);
    dev.tid2eid = d.put(cpu.tid2eid);
    dev.tid2eid_host = cpu.tid2eid.data();
  }
};

inline  // Random experts of every layer in the host source, encoded as asked.
    void
    fill_experts(Rng& rng, ResidentExpertSource& src, const Config& c) {
  const ExpertLayout& L = src.layout();
  const int64_t D = c.hidden_size, I = c.moe_intermediate_size;
  auto place = [&](std::byte* slot, const ExpertPart& p, int64_t rows, int64_t cols) {
    const HostMat m = random_mat(rng, p.dtype, rows, cols);
    std::memcpy(slot + p.offset, m.data.data(), m.data.size());
    if (p.has_scale) std::memcpy(slot + p.scale_offset, m.scale.data(), m.scale.size());
  };
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l)
    for (uint32_t e = 0; e < c.n_routed_experts; ++e) {
      std::byte* slot = src.slot(l, e);
      place(slot, L.w1, I, D);
      place(slot, L.w3, I, D);
      place(slot, L.w2, D, I);
    }
}

}  // namespace moepage::ds4::gpu::test
