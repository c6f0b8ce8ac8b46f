// config.json <-> ds4::Config. Parsing folds the legacy keys exactly as transformers'
// DeepseekV4Config.__post_init__ does (docs/deepseek-v4.md §1.2, §1.3) and then checks
// the geometry; every error is one line starting with the config.json path and naming the key.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "deepseek4/model/config.hpp"

namespace moepage::ds4 {

struct ParsedConfig {
  Config config;
  ConfigExtras extras;
  // Top-level keys of the file the parser never looked at (sorted): the engine ignores them. A key
  // read only in some cases (rope_scaling when rope_parameters holds both parts) is listed too.
  std::vector<std::string> ignored_keys;
};

// `label` is the path used in error messages. Throws ckpt::CheckpointError.
ParsedConfig parse_config_json(std::string_view text, const std::string& label);
// Reads `path` (a config.json, or a folder holding one).
ParsedConfig load_config_json(const std::filesystem::path& path);

// Geometry checks (also run by parse_config_json); throws naming `label` and the key.
void validate_config(const Config& c, const std::string& label);

std::string_view attn_kind_name(AttnKind k);  // "sliding_attention", ...
std::string_view mlp_kind_name(MlpKind k);    // "hash_moe" / "moe"
std::string_view scoring_func_name(ScoringFunc f);

}  // namespace moepage::ds4
