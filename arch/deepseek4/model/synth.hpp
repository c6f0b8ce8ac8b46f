// `moepage synth`: a DeepSeek-V4 checkpoint with random weights, deterministic per seed, streamed
// to disk shard by shard (one shard for the global tensors, one per layer) with its index,
// config.json (released style: compress_ratios, num_hash_layers, qk_rope_head_dim, rope_scaling,
// quantization_config) and generation_config.json.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "deepseek4/model/config.hpp"
#include "deepseek4/model/tensor_names.hpp"

namespace moepage::ds4 {

enum class WeightFormat : uint8_t { Fp4, Fp8, Bf16 };

struct SynthOptions {
  std::string preset = "tiny";                // tiny | small | flash
  std::optional<uint32_t> layers;             // --layers N
  std::optional<uint32_t> experts;            // --experts E
  std::optional<WeightFormat> expert_format;  // --expert-dtype fp4|fp8|bf16
  std::optional<WeightFormat> dense_format;   // projections: fp8|bf16 (preset default)
  uint64_t seed = 0;                          // --seed S
  Spelling spelling = Spelling::Released;     // tensor names to write
  std::filesystem::path out;                  // --out DIR (created; existing shards replaced)
  bool progress = true;                       // progress line on stderr when it is a TTY
};

struct SynthPlan {
  Config config;
  WeightFormat expert_format = WeightFormat::Fp4;
  WeightFormat dense_format = WeightFormat::Fp8;
};

struct SynthResult {
  std::filesystem::path dir;
  uint32_t shards = 0;
  uint64_t tensors = 0;
  uint64_t bytes = 0;  // all safetensors files
};

// The geometry a preset (plus overrides) gives; throws std::invalid_argument on a bad option.
SynthPlan synth_plan(const SynthOptions& options);
SynthResult synthesize(const SynthOptions& options);

std::optional<WeightFormat> weight_format_from_name(std::string_view name);  // fp4|fp8|bf16
std::string_view weight_format_name(WeightFormat f);

// config.json text in the released style for `plan`.
std::string released_config_json(const SynthPlan& plan);

}  // namespace moepage::ds4
