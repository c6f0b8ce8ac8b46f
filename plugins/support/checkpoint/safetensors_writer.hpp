// Streams tensors into one safetensors file without holding them in memory: declare every tensor
// (name, dtype, shape) first, then begin() writes the header (keys sorted, padded with spaces so
// the data region starts 8-byte aligned) and each tensor's bytes are appended in as many write()
// calls as the caller likes, in any tensor order (each tensor has its own cursor; data lands at
// its final offset with pwrite). finish() checks every tensor was written in full.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "dtype/dtype.hpp"

namespace moepage::ckpt {

class SafetensorsWriter {
 public:
  explicit SafetensorsWriter(std::filesystem::path path);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  void declare(const std::string& name, Dtype dtype, std::vector<uint64_t> shape);
  void set_metadata(const std::string& key, const std::string& value);
  // Computes offsets (data laid out in sorted-name order), creates the file, writes the header.
  void begin();
  // Appends bytes to the tensor's data; overrunning its size is an error.
  void write(const std::string& name, std::span<const uint8_t> bytes);
  template <typename T>
  void write_values(const std::string& name, std::span<const T> values) {
    write(name, {reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes()});
  }
  void finish();

  const std::filesystem::path& path() const { return path_; }
  // Total bytes of the file (valid after begin()).
  uint64_t file_size() const { return data_start_ + data_size_; }
  // Sum of tensor bytes declared so far.
  uint64_t data_size() const { return data_size_; }
  std::vector<std::string> names() const;

 private:
  struct Entry {
    Dtype dtype;
    std::vector<uint64_t> shape;
    uint64_t begin = 0, end = 0, written = 0;
  };
  std::filesystem::path path_;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_start_ = 0;
  uint64_t data_size_ = 0;
  int fd_ = -1;
  bool begun_ = false;
  bool finished_ = false;
};

}  // namespace moepage::ckpt
