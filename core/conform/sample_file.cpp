#include "conform/sample_file.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace moepage::conform {

uint8_t sample_byte(uint64_t seed, uint64_t offset) {
  // splitmix64 finaliser: neighbouring offsets give unrelated bytes.
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + offset + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint8_t>(z ^ (z >> 31));
}

SampleFile::SampleFile(uint64_t size, uint64_t seed, const std::filesystem::path& parent) : size_(size), seed_(seed) {
  const std::filesystem::path base = parent.empty() ? std::filesystem::temp_directory_path() : parent;
  std::string pattern = (base / "moepage-conform-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary folder under " + base.string());
  }
  dir_ = pattern;
  file_ = dir_ / "sample.bin";
  std::ofstream out(file_, std::ios::binary);
  std::vector<char> block(1 << 16);
  for (uint64_t at = 0; at < size; at += block.size()) {
    const uint64_t n = std::min<uint64_t>(block.size(), size - at);
    for (uint64_t i = 0; i < n; ++i) block[i] = static_cast<char>(sample_byte(seed, at + i));
    out.write(block.data(), static_cast<std::streamsize>(n));
  }
  out.close();
  if (!out) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw std::runtime_error("cannot write the sample file " + file_.string());
  }
}

SampleFile::~SampleFile() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::vector<uint8_t> SampleFile::expected(uint64_t offset, uint64_t length) const {
  std::vector<uint8_t> out(length);
  for (uint64_t i = 0; i < length; ++i) out[i] = sample_byte(seed_, offset + i);
  return out;
}

int64_t SampleFile::first_mismatch(uint64_t offset, const uint8_t* got, uint64_t length) const {
  for (uint64_t i = 0; i < length; ++i) {
    if (got[i] != sample_byte(seed_, offset + i)) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace moepage::conform
