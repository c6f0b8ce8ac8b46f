// The dense weights of a DeepSeek-V4 model as views into memory someone else owns (mmap'ed
// safetensors, or test buffers). Routed experts are deliberately absent: they reach the forward
// pass only through ExpertSource (expert_source.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dtype/dtype.hpp"

namespace moepage::ds4 {

struct WeightRef {
  Dtype dtype = Dtype::F32;
  std::vector<int64_t> shape;  // the stored shape (FP4: [out, in/2])
  const std::byte* data = nullptr;
  const std::byte* scale = nullptr;  // e8m0 sidecar (FP8 128x128 blocks, FP4 per 32) or null
  std::string name;                  // for error messages; empty means "unnamed"

  bool present() const { return data != nullptr; }
};

// One compressor (CSA, HCA, or the CSA indexer's own).
struct CompressorWeights {
  WeightRef wkv, wgate, ape, norm;
};

struct LayerWeights {
  WeightRef hc_attn_fn, hc_attn_base, hc_attn_scale;
  WeightRef hc_ffn_fn, hc_ffn_base, hc_ffn_scale;
  WeightRef attn_norm, ffn_norm;
  WeightRef wq_a, q_norm, wq_b, wkv, kv_norm, wo_a, wo_b, attn_sink;
  CompressorWeights compressor;                  // CSA and HCA layers
  WeightRef indexer_wq_b, indexer_weights_proj;  // CSA layers
  CompressorWeights indexer_compressor;          // CSA layers
  WeightRef gate, gate_bias, tid2eid;            // gate_bias for scored layers, tid2eid for hash layers
  WeightRef shared_w1, shared_w2, shared_w3;
};

struct Weights {
  WeightRef embed, head, norm;
  WeightRef hc_head_fn, hc_head_base, hc_head_scale;
  std::vector<LayerWeights> layers;
};

}  // namespace moepage::ds4
