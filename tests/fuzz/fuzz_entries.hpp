// The parser entry points the fuzz targets and the corpus-replay test share. Each feeds bytes to
// one parser: a CheckpointError is the expected answer to bad input; anything else escaping (or
// a parsed result that breaks its own invariants) is a bug, reported by abort() so libFuzzer
// records the input.
#pragma once
#include <cstddef>
#include <cstdint>

namespace moepage::fuzz {

// Returns true when the input parsed (for the replay test's sanity checks).
bool safetensors_header_one(const uint8_t* data, size_t size);
bool shard_index_one(const uint8_t* data, size_t size);
bool config_json_one(const uint8_t* data, size_t size);

}  // namespace moepage::fuzz
