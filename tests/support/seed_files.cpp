#include "support/seed_files.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include "support/temp_dir.hpp"

namespace moepage::test {

std::vector<SeedFile> seed_files(const std::filesystem::path& dir) {
  std::vector<SeedFile> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    out.push_back({entry.path().filename().string(), read_file_bytes(entry.path())});
  std::sort(out.begin(), out.end(), [](const SeedFile& a, const SeedFile& b) { return a.name < b.name; });
  return out;
}

size_t replay_seeds(const std::filesystem::path& dir, void (*body)(const uint8_t*, size_t), bool truncations) {
  const std::vector<SeedFile> seeds = seed_files(dir);
  for (const SeedFile& seed : seeds) {
    CAPTURE(seed.name);
    const std::vector<uint8_t>& b = seed.bytes;
    if (truncations) {
      for (size_t cut = 0; cut < b.size(); cut += 1 + b.size() / 64) CHECK_NOTHROW(body(b.data(), cut));
    }
    CHECK_NOTHROW(body(b.data(), b.size()));
  }
  return seeds.size();
}

}  // namespace moepage::test
