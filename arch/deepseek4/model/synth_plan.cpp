// Presets and the released-style config.json of `moepage synth`.
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "deepseek4/model/config_json.hpp"
#include "deepseek4/model/synth.hpp"
#include "units/enum_names.hpp"

namespace moepage::ds4 {
namespace {

// The Flash schedule, for any depth: layers 0 and 1 sliding, then CSA on even and HCA on odd
// layers (docs/deepseek-v4.md §1.4). The first three layers are hash-routed.
void fill_schedule(Config& c) {
  c.layer_types.clear();
  c.mlp_layer_types.clear();
  for (uint32_t i = 0; i < c.num_hidden_layers; ++i) {
    c.layer_types.push_back(i < 2 ? AttnKind::Sliding : (i % 2 == 0 ? AttnKind::CSA : AttnKind::HCA));
    c.mlp_layer_types.push_back(i < 3 ? MlpKind::HashMoe : MlpKind::Moe);
  }
}

void yarn_compress_rope(Config& c) {
  c.rope_main = RopeParams{};
  c.rope_main.theta = 10000.0;
  c.rope_compress = RopeParams{};
  c.rope_compress.theta = 160000.0;
  c.rope_compress.yarn = true;
  c.rope_compress.factor = 16.0;
  c.rope_compress.original_max_position = 65536.0;
  c.rope_compress.beta_fast = 32.0;
  c.rope_compress.beta_slow = 1.0;
}

constexpr units::EnumName<WeightFormat> kWeightFormatNames[] = {
    {WeightFormat::Fp4, "fp4"}, {WeightFormat::Fp8, "fp8"}, {WeightFormat::Bf16, "bf16"}};

}  // namespace

std::optional<WeightFormat> weight_format_from_name(std::string_view name) {
  return units::value_named(kWeightFormatNames, name);
}

std::string_view weight_format_name(WeightFormat f) { return units::name_of(kWeightFormatNames, f); }

SynthPlan synth_plan(const SynthOptions& o) {
  SynthPlan plan;
  Config& c = plan.config;  // starts at the released Flash geometry
  yarn_compress_rope(c);
  if (o.preset == "tiny") {
    c.vocab_size = 1024;
    c.hidden_size = 128;
    c.num_hidden_layers = 6;
    c.num_attention_heads = 4;
    c.head_dim = 64;
    c.qk_rope_head_dim = 16;
    c.q_lora_rank = 64;
    c.o_groups = 2;
    c.o_lora_rank = 32;
    c.n_routed_experts = 32;
    c.num_experts_per_tok = 4;
    c.moe_intermediate_size = 64;
    c.sliding_window = 16;
    c.compress_rate_csa = 4;
    c.compress_rate_hca = 16;
    c.index_n_heads = 8;
    c.index_head_dim = 32;
    c.index_topk = 8;
    c.max_position_embeddings = 4096;
    plan.expert_format = WeightFormat::Fp4;
    plan.dense_format = WeightFormat::Bf16;
  } else if (o.preset == "small") {
    c.vocab_size = 8192;
    c.hidden_size = 512;
    c.num_hidden_layers = 8;
    c.num_attention_heads = 8;
    c.head_dim = 128;
    c.qk_rope_head_dim = 32;
    c.q_lora_rank = 256;
    c.o_groups = 4;
    c.o_lora_rank = 128;
    c.n_routed_experts = 64;
    c.num_experts_per_tok = 6;
    c.moe_intermediate_size = 256;
    c.sliding_window = 64;
    c.compress_rate_csa = 4;
    c.compress_rate_hca = 32;
    c.index_n_heads = 16;
    c.index_head_dim = 64;
    c.index_topk = 64;
    c.max_position_embeddings = 65536;
    plan.expert_format = WeightFormat::Fp4;
    plan.dense_format = WeightFormat::Fp8;
  } else if (o.preset == "flash") {
    plan.expert_format = WeightFormat::Fp4;  // Config's defaults are the released geometry
    plan.dense_format = WeightFormat::Fp8;
  } else {
    throw std::invalid_argument("unknown synth preset '" + o.preset + "' (tiny, small or flash)");
  }
  if (o.layers) {
    if (*o.layers == 0) throw std::invalid_argument("--layers must be at least 1");
    c.num_hidden_layers = *o.layers;
  }
  if (o.experts) {
    if (*o.experts == 0) throw std::invalid_argument("--experts must be at least 1");
    c.n_routed_experts = *o.experts;
    c.num_experts_per_tok = std::min(c.num_experts_per_tok, c.n_routed_experts);
  }
  if (o.expert_format) plan.expert_format = *o.expert_format;
  if (o.dense_format) {
    if (*o.dense_format == WeightFormat::Fp4) throw std::invalid_argument("dense weights are fp8 or bf16, not fp4");
    plan.dense_format = *o.dense_format;
  }
  if (plan.expert_format == WeightFormat::Fp4 && (c.hidden_size % 32 || c.moe_intermediate_size % 32)) {
    throw std::invalid_argument("fp4 experts need hidden and expert widths that are multiples of 32");
  }
  fill_schedule(c);
  validate_config(c, "synth preset " + o.preset);
  return plan;
}

std::string released_config_json(const SynthPlan& plan) {
  const Config& c = plan.config;
  nlohmann::ordered_json j;
  j["architectures"] = {"DeepseekV4ForCausalLM"};
  j["model_type"] = "deepseek_v4";
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = 1;
  j["head_dim"] = c.head_dim;
  j["qk_rope_head_dim"] = c.qk_rope_head_dim;
  j["q_lora_rank"] = c.q_lora_rank;
  j["o_groups"] = c.o_groups;
  j["o_lora_rank"] = c.o_lora_rank;
  j["moe_intermediate_size"] = c.moe_intermediate_size;
  j["n_routed_experts"] = c.n_routed_experts;
  j["n_shared_experts"] = c.n_shared_experts;
  j["num_experts_per_tok"] = c.num_experts_per_tok;
  uint32_t hash = 0;
  while (hash < c.num_hidden_layers && c.mlp_layer_types[hash] == MlpKind::HashMoe) ++hash;
  j["num_hash_layers"] = hash;
  j["norm_topk_prob"] = c.norm_topk_prob;
  j["routed_scaling_factor"] = c.routed_scaling_factor;
  j["scoring_func"] = std::string(scoring_func_name(c.scoring_func));
  j["topk_method"] = "noaux_tc";
  j["swiglu_limit"] = c.swiglu_limit;
  j["hc_mult"] = c.hc_mult;
  j["hc_sinkhorn_iters"] = c.hc_sinkhorn_iters;
  j["hc_eps"] = c.hc_eps;
  j["sliding_window"] = c.sliding_window;
  j["index_n_heads"] = c.index_n_heads;
  j["index_head_dim"] = c.index_head_dim;
  j["index_topk"] = c.index_topk;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_main.theta;
  j["compress_rope_theta"] = c.rope_compress.theta;
  if (c.rope_compress.yarn) {
    j["rope_scaling"] = {{"type", "yarn"},
                         {"factor", c.rope_compress.factor},
                         {"original_max_position_embeddings", c.rope_compress.original_max_position},
                         {"beta_fast", c.rope_compress.beta_fast},
                         {"beta_slow", c.rope_compress.beta_slow}};
  }
  // transformers maps the labels 0/4/128 to layer types; other rates travel as the overrides.
  std::vector<uint32_t> ratios;
  for (AttnKind k : c.layer_types) ratios.push_back(k == AttnKind::Sliding ? 0 : (k == AttnKind::CSA ? 4 : 128));
  j["compress_ratios"] = ratios;
  if (c.compress_rate_csa != 4) j["compress_rate_csa"] = c.compress_rate_csa;
  if (c.compress_rate_hca != 128) j["compress_rate_hca"] = c.compress_rate_hca;
  j["num_nextn_predict_layers"] = 0;
  j["bos_token_id"] = c.bos_token_id;
  j["eos_token_id"] = c.eos_token_id;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["torch_dtype"] = "bfloat16";
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["attention_dropout"] = 0.0;
  j["initializer_range"] = 0.02;
  if (plan.dense_format == WeightFormat::Fp8 || plan.expert_format != WeightFormat::Bf16) {
    j["quantization_config"] = {{"quant_method", "fp8"},
                                {"fmt", "e4m3"},
                                {"activation_scheme", "dynamic"},
                                {"scale_fmt", "ue8m0"},
                                {"weight_block_size", {128, 128}}};
  }
  j["expert_dtype"] = std::string(weight_format_name(plan.expert_format));
  return j.dump(2) + "\n";
}

}  // namespace moepage::ds4
