// Weights checked against the config and put in the form the kernels use: matrices stay views of
// the stored bytes (cpu::MatRef), small vectors (norm weights, biases, sinks, ape) become floats.
#pragma once
#include <cstdint>
#include <vector>

#include "deepseek4/cpu/matref.hpp"
#include "deepseek4/cpu/rope.hpp"
#include "deepseek4/forward/weights.hpp"
#include "deepseek4/model/config.hpp"

namespace moepage::ds4 {

struct HcParams {
  cpu::MatRef fn;            // [(2+N)N, N*D] for a block site, [N, N*D] for the head
  std::vector<float> base;   // [(2+N)N] or [N]
  std::vector<float> scale;  // [3] or [1]
};

struct CompressorParams {
  cpu::MatRef wkv, wgate;   // [width, D]
  std::vector<float> ape;   // [ratio, width]
  std::vector<float> norm;  // [dim]
  uint32_t ratio = 0;
  uint32_t dim = 0;    // output entry width
  uint32_t width = 0;  // dim, or 2*dim with overlap (CSA: Ca | Cb)
  bool overlap = false;
};

struct LayerParams {
  AttnKind kind = AttnKind::Sliding;
  MlpKind mlp = MlpKind::Moe;
  const cpu::Rope* rope = nullptr;  // main for sliding layers, compress for CSA/HCA
  HcParams hc_attn, hc_ffn;
  std::vector<float> attn_norm, ffn_norm, q_norm, kv_norm, sink;
  cpu::MatRef wq_a, wq_b, wkv, wo_a, wo_b;
  CompressorParams comp;        // CSA, HCA
  CompressorParams index_comp;  // CSA
  cpu::MatRef index_wq_b, index_weights_proj;
  cpu::MatRef gate;
  std::vector<float> gate_bias;  // scored layers (zeros when the checkpoint has none)
  std::vector<int32_t> tid2eid;  // hash layers: [vocab, k]
  cpu::MatRef shared_w1, shared_w2, shared_w3;
};

struct ModelParams {
  cpu::MatRef embed, head;
  std::vector<float> norm;
  HcParams hc_head;
  std::vector<LayerParams> layers;
};

// Throws std::invalid_argument naming the tensor and the expected shape on any mismatch.
// The ropes must outlive the result.
ModelParams prepare_params(const Config& cfg, const Weights& w, const cpu::Rope& rope_main,
                           const cpu::Rope& rope_compress);

// Throws std::invalid_argument when the config cannot describe a DeepSeek-V4 model this engine
// runs (layer lists of the wrong length, odd rope width, and so on).
void validate_config(const Config& cfg);

}  // namespace moepage::ds4
