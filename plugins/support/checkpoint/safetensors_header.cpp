#include "checkpoint/safetensors_header.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_error.hpp"

namespace moepage::ckpt {
namespace {

[[noreturn]] void fail_tensor(std::string_view label, std::string_view tensor, const std::string& what) {
  throw CheckpointError(std::string(label) + ": tensor '" + std::string(tensor) + "': " + what);
}

// JSON values as they may appear in an error line: short, on one line.
std::string brief(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

uint64_t as_u64(const nlohmann::json& v, std::string_view label, std::string_view tensor, const char* field) {
  if (!v.is_number_unsigned()) {
    fail_tensor(label, tensor, std::string(field) + " must hold non-negative integers, got " + brief(v));
  }
  return v.get<uint64_t>();
}

HeaderTensor parse_entry(const std::string& name, const nlohmann::json& entry, std::string_view label) {
  if (!entry.is_object()) fail_tensor(label, name, "header entry must be an object, got " + brief(entry));
  HeaderTensor t;
  t.name = name;
  const auto dt = entry.find("dtype");
  if (dt == entry.end() || !dt->is_string()) fail_tensor(label, name, "missing string field 'dtype'");
  const auto dtype = dtype_from_name(dt->get_ref<const std::string&>());
  if (!dtype) fail_tensor(label, name, "unknown dtype " + brief(*dt));
  t.dtype = *dtype;

  const auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array()) fail_tensor(label, name, "missing array field 'shape'");
  if (shape->size() > 8)
    fail_tensor(label, name, "shape has " + std::to_string(shape->size()) + " dimensions (at most 8)");
  for (const auto& d : *shape) t.shape.push_back(as_u64(d, label, name, "shape"));

  const auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2) {
    fail_tensor(label, name, "'data_offsets' must be an array [begin, end]");
  }
  t.begin = as_u64((*offsets)[0], label, name, "data_offsets");
  t.end = as_u64((*offsets)[1], label, name, "data_offsets");
  if (t.end < t.begin) {
    fail_tensor(label, name,
                "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "] end before begin");
  }
  uint64_t expected = 0;
  if (!tensor_byte_size(t.shape, t.dtype, expected)) {
    fail_tensor(label, name, "shape " + shape_to_string(t.shape) + " overflows 64-bit byte counts");
  }
  if (expected != t.end - t.begin) {
    fail_tensor(label, name,
                "shape " + shape_to_string(t.shape) + " x " + std::string(dtype_name(t.dtype)) + " is " +
                    std::to_string(expected) + " bytes but data_offsets span " + std::to_string(t.end - t.begin));
  }
  return t;
}

}  // namespace

bool tensor_byte_size(const std::vector<uint64_t>& shape, Dtype dtype, uint64_t& out) {
  uint64_t n = dtype_size(dtype);
  for (uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d) return false;
    n *= d;
  }
  out = n;
  return true;
}

std::string shape_to_string(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

uint64_t parse_header_length(std::span<const uint8_t> first8, uint64_t file_size, std::string_view label) {
  if (first8.size() < 8 || file_size < 8) {
    fail_labelled(label,
                  "file is " + std::to_string(file_size) + " bytes, shorter than the 8-byte safetensors header length");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | first8[size_t(i)];
  if (n > file_size - 8) {
    fail_labelled(label, "header length " + std::to_string(n) + " runs past the end of the file (" +
                             std::to_string(file_size) + " bytes)");
  }
  if (n > kMaxHeaderLength) {
    fail_labelled(label, "header length " + std::to_string(n) + " exceeds the " + std::to_string(kMaxHeaderLength) +
                             "-byte limit");
  }
  if (n < 2) fail_labelled(label, "header length " + std::to_string(n) + " is too small to hold a JSON object");
  return n;
}

SafetensorsHeader parse_safetensors_header(std::span<const uint8_t> bytes, uint64_t file_size, std::string_view label) {
  SafetensorsHeader h;
  h.header_length = parse_header_length(bytes.first(std::min<size_t>(8, bytes.size())), file_size, label);
  if (bytes.size() < 8 + h.header_length) {
    fail_labelled(label, "only " + std::to_string(bytes.size()) + " bytes available for a header of " +
                             std::to_string(h.header_length));
  }
  h.data_start = 8 + h.header_length;
  h.data_size = file_size - h.data_start;

  const auto* begin = bytes.data() + 8;
  const auto json = nlohmann::json::parse(begin, begin + h.header_length, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) fail_labelled(label, "malformed JSON in the safetensors header");
  if (!json.is_object()) fail_labelled(label, "safetensors header must be a JSON object, got " + brief(json));

  for (const auto& [key, value] : json.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail_labelled(label, "__metadata__ must be an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) fail_labelled(label, "__metadata__ key '" + mk + "' must be a string, got " + brief(mv));
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    HeaderTensor t = parse_entry(key, value, label);
    if (t.end > h.data_size) {
      fail_tensor(label, t.name,
                  "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                      "] lie outside the data region of " + std::to_string(h.data_size) + " bytes");
    }
    h.tensors.push_back(std::move(t));
  }

  // Overlap check: sort spans by begin; an empty tensor overlaps nothing.
  std::vector<const HeaderTensor*> by_begin;
  for (const auto& t : h.tensors) {
    if (t.end > t.begin) by_begin.push_back(&t);
  }
  std::sort(by_begin.begin(), by_begin.end(), [](const HeaderTensor* a, const HeaderTensor* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
  });
  for (size_t i = 1; i < by_begin.size(); ++i) {
    const HeaderTensor& prev = *by_begin[i - 1];
    const HeaderTensor& cur = *by_begin[i];
    if (cur.begin < prev.end) {
      fail_tensor(label, cur.name,
                  "data_offsets [" + std::to_string(cur.begin) + ", " + std::to_string(cur.end) + "] overlap tensor '" +
                      prev.name + "' [" + std::to_string(prev.begin) + ", " + std::to_string(prev.end) + "]");
    }
  }
  return h;
}

}  // namespace moepage::ckpt
