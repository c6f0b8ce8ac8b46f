// config.json parsing: the released Flash config with its legacy keys, the modern keys, and
// geometry errors that name the file and the key.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "checkpoint/checkpoint_error.hpp"
#include "deepseek4/model/config_json.hpp"

using namespace moepage::ds4;
using moepage::ckpt::CheckpointError;

namespace moepage::ds4 {
// For doctest's messages.
std::ostream& operator<<(std::ostream& out, const RopeParams& r) {
  return out << "{theta " << r.theta << ", yarn " << r.yarn << ", factor " << r.factor << ", original_max_position "
             << r.original_max_position << ", beta_fast " << r.beta_fast << ", beta_slow " << r.beta_slow << "}";
}
}  // namespace moepage::ds4

namespace {

// DeepSeek-V4-Flash config.json as released (docs/deepseek-v4.md §1.4), with the
// 44-entry compress_ratios whose last entry belongs to the MTP layer.
const char* kFlashConfig = R"({
  "architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4",
  "hidden_size": 4096, "num_hidden_layers": 43, "num_attention_heads": 64, "num_key_value_heads": 1,
  "head_dim": 512, "qk_rope_head_dim": 64, "q_lora_rank": 1024, "o_groups": 8, "o_lora_rank": 1024,
  "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 6,
  "num_hash_layers": 3, "norm_topk_prob": true, "routed_scaling_factor": 1.5, "scoring_func": "sqrtsoftplus",
  "topk_method": "noaux_tc", "swiglu_limit": 10.0, "hc_mult": 4, "hc_sinkhorn_iters": 20, "hc_eps": 1e-6,
  "sliding_window": 128, "index_n_heads": 64, "index_head_dim": 128, "index_topk": 512, "vocab_size": 129280,
  "max_position_embeddings": 1048576, "rms_norm_eps": 1e-6, "rope_theta": 10000, "compress_rope_theta": 160000,
  "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536, "beta_fast": 32, "beta_slow": 1},
  "num_nextn_predict_layers": 1, "bos_token_id": 0, "eos_token_id": 1, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "hidden_act": "silu", "attention_bias": false, "attention_dropout": 0.0,
  "initializer_range": 0.02,
  "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "scale_fmt": "ue8m0",
                          "weight_block_size": [128, 128]},
  "compress_ratios": [0, 0, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128,
                      4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 0]
})";

// A small valid config as JSON, for tests that change one key.
nlohmann::json small_config() {
  return nlohmann::json::parse(R"({
    "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "head_dim": 64, "qk_rope_head_dim": 16,
    "q_lora_rank": 64, "o_groups": 2, "o_lora_rank": 32, "moe_intermediate_size": 64, "n_routed_experts": 8,
    "num_experts_per_tok": 2, "vocab_size": 256, "index_n_heads": 4, "index_head_dim": 32, "index_topk": 4,
    "sliding_window": 8, "compress_ratios": [0, 4, 128, 4], "num_hash_layers": 1
  })");
}

std::string error_of(const nlohmann::json& j) {
  try {
    parse_config_json(j.dump(), "/models/x/config.json");
  } catch (const CheckpointError& e) {
    return e.what();
  }
  FAIL("config parsed: " << j.dump());
  return {};
}

// The error of small_config() with `key` set to `value`.
std::string error_with(const std::string& key, const nlohmann::json& value) {
  nlohmann::json j = small_config();
  j[key] = value;
  return error_of(j);
}

}  // namespace

TEST_CASE("the released Flash config gives the Flash layer schedule, hash layers and rope") {
  const ParsedConfig p = parse_config_json(kFlashConfig, "config.json");
  const Config& c = p.config;
  REQUIRE(c.layer_types.size() == 43);  // the 44th ratio (MTP) is cut
  CHECK(c.layer_types[0] == AttnKind::Sliding);
  CHECK(c.layer_types[1] == AttnKind::Sliding);
  for (uint32_t l = 2; l <= 42; l += 2) CHECK(c.layer_types[l] == AttnKind::CSA);
  for (uint32_t l = 3; l <= 41; l += 2) CHECK(c.layer_types[l] == AttnKind::HCA);
  for (uint32_t l = 0; l < 43; ++l) CHECK(c.mlp_layer_types[l] == (l <= 2 ? MlpKind::HashMoe : MlpKind::Moe));
  CHECK(c.compress_rate(2) == 4);
  CHECK(c.compress_rate(3) == 128);
  CHECK(c.compress_rate(0) == 0);
  CHECK(c.qk_rope_head_dim == 64);
  CHECK(p.extras.partial_rotary_factor == 0.125);
  CHECK(p.extras.num_nextn_predict_layers == 1);
  CHECK(c.rope_main.theta == 10000.0);
  CHECK_FALSE(c.rope_main.yarn);
  // theta, yarn, factor, original_max_position, beta_fast, beta_slow
  CHECK(c.rope_compress == RopeParams{160000.0, true, 16.0, 65536.0, 32.0, 1.0});
  CHECK(&c.rope_for(1) == &c.rope_main);
  CHECK(&c.rope_for(2) == &c.rope_compress);
  CHECK(c.scoring_func == ScoringFunc::SqrtSoftplus);
  CHECK(c.n_routed_experts == 256);
  CHECK(c.num_experts_per_tok == 6);
  CHECK(c.routed_scaling_factor == 1.5);
  CHECK(c.index_topk == 512);
  CHECK(c.vocab_size == 129280);
}

TEST_CASE(
    "modern keys layer_types, mlp_layer_types, compress_rates, partial_rotary_factor and nested rope_parameters load") {
  nlohmann::json j = small_config();
  j.erase("compress_ratios");
  j.erase("num_hash_layers");
  j.erase("qk_rope_head_dim");
  j["layer_types"] = {"sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                      "compressed_sparse_attention", "sliding_attention"};  // one extra entry is cut
  j["mlp_layer_types"] = {"hash_moe", "hash_moe", "moe", "moe"};
  j["compress_rates"] = {{"compressed_sparse_attention", 8}, {"heavily_compressed_attention", 32}};
  j["partial_rotary_factor"] = 0.5;
  j["rope_parameters"] = {{"main", {{"rope_type", "default"}, {"rope_theta", 5000.0}}},
                          {"compress",
                           {{"rope_type", "yarn"},
                            {"rope_theta", 80000.0},
                            {"factor", 4.0},
                            {"original_max_position_embeddings", 4096},
                            {"beta_fast", 16},
                            {"beta_slow", 2}}}};
  const Config c = parse_config_json(j.dump(), "config.json").config;
  CHECK(c.layer_types == std::vector<AttnKind>{AttnKind::Sliding, AttnKind::CSA, AttnKind::HCA, AttnKind::CSA});
  CHECK(c.mlp_layer_types == std::vector<MlpKind>{MlpKind::HashMoe, MlpKind::HashMoe, MlpKind::Moe, MlpKind::Moe});
  CHECK(c.compress_rate(1) == 8);
  CHECK(c.compress_rate(2) == 32);
  CHECK(c.qk_rope_head_dim == 32);
  CHECK(c.rope_main.theta == 5000.0);
  CHECK(c.rope_compress == RopeParams{80000.0, true, 4.0, 4096.0, 16.0, 2.0});
}

TEST_CASE("legacy compress_rate_csa and compress_rate_hca override the rates, and HCA ratios map by label") {
  nlohmann::json j = small_config();
  j["compress_rate_hca"] = 16;
  const Config c = parse_config_json(j.dump(), "config.json").config;
  CHECK(c.layer_types[2] == AttnKind::HCA);
  CHECK(c.compress_rate(2) == 16);
  CHECK(c.compress_rate(1) == 4);
}

TEST_CASE(
    "without layer_types or compress_ratios the schedule is transformers' default: two HCA, then CSA on odd offsets") {
  nlohmann::json j = small_config();
  j.erase("compress_ratios");
  const Config c = parse_config_json(j.dump(), "config.json").config;
  CHECK(c.layer_types == std::vector<AttnKind>{AttnKind::HCA, AttnKind::HCA, AttnKind::HCA, AttnKind::CSA});
}

TEST_CASE("geometry errors start with the config.json path and name the key") {
  const std::string path = "/models/x/config.json: key '";
  CHECK(error_with("o_groups", 3) ==
        path + "o_groups': num_attention_heads x head_dim (4 x 64) is not divisible by o_groups 3");
  CHECK(error_with("qk_rope_head_dim", 15) ==
        path + "qk_rope_head_dim': rotated dims 15 must be even (interleaved pairs)");
  CHECK(error_with("qk_rope_head_dim", 66).find(path + "qk_rope_head_dim'") == 0);
  CHECK(error_with("index_head_dim", 8) ==
        path +
            "qk_rope_head_dim': rotated dims 16 exceed index_head_dim 8 (the indexer rotates the same trailing dims)");
  CHECK(error_with("num_experts_per_tok", 9) == path + "num_experts_per_tok': top-k 9 exceeds n_routed_experts 8");
  CHECK(error_with("compress_ratios", {0, 4, 128}) == path + "compress_ratios': has 3 entries for num_hidden_layers 4");
  CHECK(error_with("compress_ratios", {0, 4, 7, 4}) ==
        path + "compress_ratios': entry 7 is not 0 (sliding), 4 (CSA) or 128 (HCA)");
  CHECK(error_with("layer_types", {"sliding_attention", "dense"}).find(path + "layer_types': entries must be one of") ==
        0);
  CHECK(error_with("mlp_layer_types", {"moe", "moe"}) ==
        path + "mlp_layer_types': has 2 entries for num_hidden_layers 4");
  CHECK(error_with("scoring_func", "relu") ==
        path + "scoring_func': unknown scoring function \"relu\" (sqrtsoftplus, sigmoid or softmax)");
  CHECK(error_with("hidden_size", "wide") == path + "hidden_size': expected a non-negative integer, got \"wide\"");
  CHECK(error_with("hidden_size", 0) == path + "hidden_size': must be positive");
  CHECK(error_with("num_key_value_heads", 8).find(path + "num_key_value_heads'") == 0);
  CHECK(error_with("num_hidden_layers", 4000000000u) ==
        path + "num_hidden_layers': 4000000000 exceeds the limit of 4096");
  CHECK(error_with("rope_scaling", {{"type", "longrope"}}) ==
        path + "rope_scaling.rope_type': unsupported rope type \"longrope\" (default or yarn)");
  CHECK(error_with("rope_scaling", {{"type", "yarn"}, {"factor", -2}}) ==
        path + "rope_scaling.factor': YaRN factor must be positive");
}

TEST_CASE("malformed config JSON names the file") {
  CHECK_THROWS_WITH_AS(parse_config_json("{\"hidden_size\": ", "/m/config.json"), "/m/config.json: malformed JSON",
                       CheckpointError);
  CHECK_THROWS_WITH_AS(parse_config_json("[1]", "/m/config.json"), "/m/config.json: config must be a JSON object",
                       CheckpointError);
}

TEST_CASE("scales, limits and iteration counts out of range are refused naming config.json and the key") {
  const std::string path = "/models/x/config.json: key '";
  CHECK(error_with("routed_scaling_factor", 0) ==
        path + "routed_scaling_factor': must be a positive finite number, got 0.000000");
  CHECK(error_with("routed_scaling_factor", -1.5).find(path + "routed_scaling_factor'") == 0);
  CHECK(error_with("swiglu_limit", 0) == path + "swiglu_limit': must be a positive finite number, got 0.000000");
  CHECK(error_with("swiglu_limit", -10).find(path + "swiglu_limit'") == 0);
  CHECK(error_with("rms_norm_eps", -1e-6).find(path + "rms_norm_eps': must be a positive finite number") == 0);
  CHECK(error_with("hc_sinkhorn_iters", 2000000000) ==
        path + "hc_sinkhorn_iters': must be from 1 to 1000, got 2000000000");
  CHECK(error_with("hc_sinkhorn_iters", 0) == path + "hc_sinkhorn_iters': must be from 1 to 1000, got 0");
  CHECK(error_with("hc_mult", 100000) == path + "hc_mult': must be from 1 to 64");
}

TEST_CASE("keys the parser never reads are listed, those read only in some cases too") {
  nlohmann::json j = small_config();
  j["torch_dtype"] = "bfloat16";
  j["zzz_custom"] = 1;
  CHECK(parse_config_json(j.dump(), "/m/config.json").ignored_keys ==
        std::vector<std::string>{"torch_dtype", "zzz_custom"});
  // layer_types wins over compress_ratios: the ratios are ignored, and said to be.
  j = small_config();
  j["layer_types"] = {"sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                      "compressed_sparse_attention"};
  CHECK(parse_config_json(j.dump(), "/m/config.json").ignored_keys == std::vector<std::string>{"compress_ratios"});
}
