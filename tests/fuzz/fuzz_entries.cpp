#include "fuzz_entries.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string_view>

#include "checkpoint/checkpoint_error.hpp"
#include "checkpoint/safetensors_header.hpp"
#include "checkpoint/shard_index.hpp"
#include "deepseek4/model/config_json.hpp"

namespace moepage::fuzz {
namespace {

[[noreturn]] void bug(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

template <typename F>
bool guarded(F&& f) {
  try {
    f();
    return true;
  } catch (const ckpt::CheckpointError& e) {
    // Bad input must be answered with one line.
    if (std::string_view(e.what()).find('\n') != std::string_view::npos) bug("multi-line error message");
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
}

}  // namespace

bool safetensors_header_one(const uint8_t* data, size_t size) {
  return guarded([&] {
    const auto h = ckpt::parse_safetensors_header(std::span<const uint8_t>(data, size), size, "fuzz.safetensors");
    if (h.data_start + h.data_size != size) bug("data region does not end at the file end");
    for (const auto& t : h.tensors) {
      uint64_t n = 0;
      if (!ckpt::tensor_byte_size(t.shape, t.dtype, n) || n != t.end - t.begin) bug("shape and byte span disagree");
      if (t.end > h.data_size || t.begin > t.end) bug("tensor outside the data region");
    }
  });
}

bool shard_index_one(const uint8_t* data, size_t size) {
  return guarded([&] {
    const auto idx =
        ckpt::parse_shard_index(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.index.json");
    for (const auto& [tensor, file] : idx.weight_map) {
      if (file.empty() || file.find('/') != std::string::npos || file == "..") bug("shard path escapes the folder");
    }
  });
}

bool config_json_one(const uint8_t* data, size_t size) {
  return guarded([&] {
    const auto p =
        ds4::parse_config_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
    const auto& c = p.config;
    if (c.layer_types.size() != c.num_hidden_layers || c.mlp_layer_types.size() != c.num_hidden_layers)
      bug("schedule length");
    if (c.num_experts_per_tok > c.n_routed_experts || c.qk_rope_head_dim > c.head_dim) bug("geometry not validated");
  });
}

}  // namespace moepage::fuzz
