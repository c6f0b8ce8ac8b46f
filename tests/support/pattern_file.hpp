// Files whose every byte is a hash of its offset, for transport and pager tests: a misplaced,
// stale or short range never matches by accident.
#pragma once
#include <cstdint>
#include <filesystem>

#include "support/temp_dir.hpp"

namespace moepage::test {

// Byte i of every pattern file.
uint8_t pattern_byte(uint64_t i);

// True when p[0, n) holds a pattern file's bytes starting at file offset `from`.
bool matches_pattern(const uint8_t* p, uint64_t n, uint64_t from);

// A temporary file of `size` pattern bytes, removed at scope exit; `sparse` leaves it a hole
// (reads give zeros) for tests that need only its size.
class PatternFile {
 public:
  explicit PatternFile(uint64_t size, bool sparse = false);
  const std::filesystem::path& path() const { return file_.path(); }

 private:
  TempFile file_{"pattern"};
};

}  // namespace moepage::test
