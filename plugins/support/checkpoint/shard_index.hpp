// model.safetensors.index.json: {"metadata": {...}, "weight_map": {tensor: shard file name}}.
// Parsed from memory so the reader, the tests and the fuzzer share one entry point.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace moepage::ckpt {

struct ShardIndex {
  std::map<std::string, std::string> weight_map;  // tensor -> file name (relative to the folder)
  std::vector<std::string> files;                 // distinct file names, sorted
  uint64_t total_size = 0;                        // metadata.total_size when present
};

inline constexpr const char* kIndexFileName = "model.safetensors.index.json";

// Throws CheckpointError naming `label`. Shard names must be plain file names inside the folder
// (no absolute paths, no '..', no directories), so an index cannot point outside the checkpoint.
ShardIndex parse_shard_index(std::string_view json_text, std::string_view label);

// The JSON text of an index for `weight_map`.
std::string shard_index_json(const std::map<std::string, std::string>& weight_map, uint64_t total_size);
// Writes <dir>/model.safetensors.index.json; throws CheckpointError naming the file on failure.
void write_shard_index(const std::filesystem::path& dir, const std::map<std::string, std::string>& weight_map,
                       uint64_t total_size);

}  // namespace moepage::ckpt
