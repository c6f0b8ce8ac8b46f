// A safetensors file's bytes from a raw JSON header and a data region, with the header length
// written as given: the checkpoint, ds4-model and fuzz-replay suites build broken files with it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moepage::testing {

inline std::vector<uint8_t> safetensors_bytes(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace moepage::testing
