// A generated file with known content for byte-exactness checks, in a private temporary folder
// that is removed again. Byte i of the file is a hash of (seed, i), so any misplaced, shifted or
// stale byte is caught, and expected bytes are computed rather than stored.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace moepage::conform {

// The byte at `offset` of a sample file made with `seed`.
uint8_t sample_byte(uint64_t seed, uint64_t offset);

class SampleFile {
 public:
  // Writes `size` bytes into a new folder under `parent` (the system temporary folder if empty).
  SampleFile(uint64_t size, uint64_t seed, const std::filesystem::path& parent = {});
  ~SampleFile();
  SampleFile(const SampleFile&) = delete;
  SampleFile& operator=(const SampleFile&) = delete;

  const std::filesystem::path& path() const noexcept { return file_; }
  const std::filesystem::path& folder() const noexcept { return dir_; }
  uint64_t size() const noexcept { return size_; }
  uint64_t seed() const noexcept { return seed_; }
  // The expected bytes of [offset, offset + length).
  std::vector<uint8_t> expected(uint64_t offset, uint64_t length) const;
  // The first index where `got` differs from the file at `offset`, or -1 when equal.
  int64_t first_mismatch(uint64_t offset, const uint8_t* got, uint64_t length) const;

 private:
  std::filesystem::path dir_;
  std::filesystem::path file_;
  uint64_t size_;
  uint64_t seed_;
};

}  // namespace moepage::conform
