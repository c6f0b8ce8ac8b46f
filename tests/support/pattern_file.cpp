#include "support/pattern_file.hpp"

#include <string>

namespace moepage::test {

uint8_t pattern_byte(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint8_t>(z ^ (z >> 31));
}

bool matches_pattern(const uint8_t* p, uint64_t n, uint64_t from) {
  for (uint64_t i = 0; i < n; ++i)
    if (p[i] != pattern_byte(from + i)) return false;
  return true;
}

PatternFile::PatternFile(uint64_t size, bool sparse) {
  if (sparse) {
    write_file(path(), std::string_view());
    std::filesystem::resize_file(path(), size);
    return;
  }
  std::string bytes(size, '\0');
  for (uint64_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(pattern_byte(i));
  write_file(path(), bytes);
}

}  // namespace moepage::test
