// Parsing and validation of one safetensors header, on an in-memory buffer so the same entry
// point serves the reader, the tests and the fuzzer.
//
// Layout: u64 little-endian header length N, N bytes of JSON, then the data region. The JSON maps
// each tensor name to {dtype, shape, data_offsets: [begin, end]} (offsets relative to the data
// region) and may hold "__metadata__" (string -> string).
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dtype/dtype.hpp"

namespace moepage::ckpt {

struct HeaderTensor {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // relative to the data region
  uint64_t end = 0;
};

struct SafetensorsHeader {
  uint64_t header_length = 0;         // N
  uint64_t data_start = 0;            // 8 + N: absolute offset of the data region
  uint64_t data_size = 0;             // file size - data_start
  std::vector<HeaderTensor> tensors;  // in the JSON's key order (sorted by nlohmann)
  std::map<std::string, std::string> metadata;
};

// Headers larger than this are refused before any allocation (the safetensors library uses the
// same 100 MB cap; the real DeepSeek-V4 shards have headers of a few hundred KiB).
inline constexpr uint64_t kMaxHeaderLength = 100ull << 20;

// Reads N from the first 8 bytes and checks 8 + N fits in file_size. `label` names the file in
// errors. Throws CheckpointError.
uint64_t parse_header_length(std::span<const uint8_t> first8, uint64_t file_size, std::string_view label);

// `bytes` starts at the beginning of the file and holds at least 8 + N bytes; file_size is the
// whole file's size (for the data-region checks). Validates everything the header alone can tell:
// JSON syntax, entry shapes, known dtypes, shape x dtype size == byte span, offsets inside the
// data region, no two tensors overlapping. Throws CheckpointError naming `label` and the tensor.
SafetensorsHeader parse_safetensors_header(std::span<const uint8_t> bytes, uint64_t file_size, std::string_view label);

// Product of the shape times the element size; false on overflow.
bool tensor_byte_size(const std::vector<uint64_t>& shape, Dtype dtype, uint64_t& out);

std::string shape_to_string(const std::vector<uint64_t>& shape);

}  // namespace moepage::ckpt
