// Reader for the .npy files the golden fixtures use: little-endian float32 ('<f4') or int64
// ('<i8'; '<i4' is widened), C order, format versions 1-3. Errors name the file.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace moepage::test {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> f32;    // filled for '<f4'
  std::vector<int64_t> i64;  // filled for '<i8' and '<i4'
  bool is_float() const { return !f32.empty() || (i64.empty() && numel() == 0); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

namespace npy_detail {
inline std::string value_of(const std::string& header, const std::string& key, const std::string& path) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw std::runtime_error(path + ": npy header has no '" + key + "'");
  size_t v = header.find(':', k);
  if (v == std::string::npos) throw std::runtime_error(path + ": npy header is malformed near '" + key + "'");
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  size_t end = v;
  if (v < header.size() && header[v] == '(') end = header.find(')', v) + 1;
  else if (v < header.size() && header[v] == '\'') end = header.find('\'', v + 1) + 1;
  else end = header.find_first_of(",}", v);
  if (end == std::string::npos || end == 0)
    throw std::runtime_error(path + ": npy header is malformed near '" + key + "'");
  return header.substr(v, end - v);
}
}  // namespace npy_detail

inline NpyArray parse_npy(const std::string& bytes, const std::string& path) {
  auto fail = [&](const std::string& what) { throw std::runtime_error(path + ": " + what); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) fail("not an .npy file (bad magic)");
  const int major = uint8_t(bytes[6]);
  size_t header_len = 0, at = 0;
  if (major == 1) {
    header_len = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail("truncated npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    at = 12;
  } else {
    fail("unsupported npy version " + std::to_string(major));
  }
  if (bytes.size() < at + header_len) fail("truncated npy header");
  const std::string header = bytes.substr(at, header_len);
  at += header_len;
  const std::string descr = npy_detail::value_of(header, "descr", path);
  if (npy_detail::value_of(header, "fortran_order", path) != "False") fail("Fortran-order arrays are not supported");
  std::string shape = npy_detail::value_of(header, "shape", path);
  NpyArray a;
  for (size_t i = 1; i < shape.size();) {  // "(a, b, )"
    while (i < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
    if (i >= shape.size() || shape[i] == ')') break;
    size_t used = 0;
    a.shape.push_back(std::stoll(shape.substr(i), &used));
    i += used;
  }
  const int64_t n = a.numel();
  size_t item = 0;
  if (descr == "'<f4'") item = 4;
  else if (descr == "'<i8'") item = 8;
  else if (descr == "'<i4'") item = 4;
  else fail("dtype " + descr + " is not '<f4', '<i8' or '<i4'");
  if (bytes.size() - at != size_t(n) * item)
    fail("holds " + std::to_string(bytes.size() - at) + " data bytes, the header says " +
         std::to_string(size_t(n) * item));
  if (descr == "'<f4'") {
    a.f32.resize(size_t(n));
    std::memcpy(a.f32.data(), bytes.data() + at, size_t(n) * 4);
  } else if (descr == "'<i8'") {
    a.i64.resize(size_t(n));
    std::memcpy(a.i64.data(), bytes.data() + at, size_t(n) * 8);
  } else {
    a.i64.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, bytes.data() + at + size_t(i) * 4, 4);
      a.i64[size_t(i)] = v;
    }
  }
  return a;
}

inline NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, path);
}

}  // namespace moepage::test
