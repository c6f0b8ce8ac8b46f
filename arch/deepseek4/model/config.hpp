// DeepSeek-V4 hyper-parameters as the engine uses them: config.json with the legacy keys
// already folded in (see docs/deepseek-v4.md §1). Parsing lives in config_json.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moepage::ds4 {

enum class AttnKind : uint8_t { Sliding, CSA, HCA };
enum class MlpKind : uint8_t { Moe, HashMoe };
enum class ScoringFunc : uint8_t { SqrtSoftplus, Sigmoid, Softmax };

struct RopeParams {
  double theta = 10000.0;
  bool yarn = false;  // compress rope: YaRN frequency blend, amplitude 1
  double factor = 1.0;
  double original_max_position = 0.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool operator==(const RopeParams&) const = default;
};

struct Config {
  uint32_t vocab_size = 129280;
  uint32_t hidden_size = 4096;
  uint32_t moe_intermediate_size = 2048;  // routed and shared expert width
  uint32_t num_hidden_layers = 43;
  uint32_t num_attention_heads = 64;
  uint32_t head_dim = 512;
  uint32_t qk_rope_head_dim = 64;  // trailing rotated dims of each head
  uint32_t q_lora_rank = 1024;
  uint32_t o_groups = 8;
  uint32_t o_lora_rank = 1024;
  uint32_t n_routed_experts = 256;
  uint32_t n_shared_experts = 1;
  uint32_t num_experts_per_tok = 6;
  ScoringFunc scoring_func = ScoringFunc::SqrtSoftplus;
  bool norm_topk_prob = true;
  double routed_scaling_factor = 1.5;
  double swiglu_limit = 10.0;
  uint32_t sliding_window = 128;
  uint32_t compress_rate_csa = 4;
  uint32_t compress_rate_hca = 128;
  uint32_t hc_mult = 4;
  uint32_t hc_sinkhorn_iters = 20;
  double hc_eps = 1e-6;
  uint32_t index_n_heads = 64;
  uint32_t index_head_dim = 128;
  uint32_t index_topk = 512;
  double rms_norm_eps = 1e-6;
  uint64_t max_position_embeddings = 1048576;
  int32_t bos_token_id = 0;
  int32_t eos_token_id = 1;
  bool tie_word_embeddings = false;
  RopeParams rope_main;                  // sliding-only layers
  RopeParams rope_compress;              // every layer with a compressor (CSA, HCA)
  std::vector<AttnKind> layer_types;     // [num_hidden_layers]
  std::vector<MlpKind> mlp_layer_types;  // [num_hidden_layers]

  uint32_t compress_rate(uint32_t layer) const {
    switch (layer_types[layer]) {
      case AttnKind::CSA: return compress_rate_csa;
      case AttnKind::HCA: return compress_rate_hca;
      default: return 0;
    }
  }
  const RopeParams& rope_for(uint32_t layer) const {
    return layer_types[layer] == AttnKind::Sliding ? rope_main : rope_compress;
  }
};

}  // namespace moepage::ds4

// ---- appended by the checkpoint layer (issue 3): fields config.json carries beyond the above ----
namespace moepage::ds4 {

// Values config.json may hold that the forward does not need but tools report and synth writes.
struct ConfigExtras {
  uint32_t num_key_value_heads = 1;
  uint32_t num_nextn_predict_layers = 0;
  double partial_rotary_factor = 0.125;
  std::string model_type = "deepseek_v4";
};

}  // namespace moepage::ds4
