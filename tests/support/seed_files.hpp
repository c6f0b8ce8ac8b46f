// Fuzz seeds as the doctest suites replay them with the ordinary compiler (and under the
// sanitizers), so CI keeps what fuzzing found without clang or libFuzzer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace moepage::test {

struct SeedFile {
  std::string name;  // the file name, e.g. "valid-rank2.hfadpt"
  std::vector<uint8_t> bytes;
};

// Every file of `dir`, sorted by name, with its bytes.
std::vector<SeedFile> seed_files(const std::filesystem::path& dir);

// Feeds every seed of `dir` to `body`, and with `truncations` about 64 prefixes of each too,
// checking that nothing escapes; returns how many seeds there were.
size_t replay_seeds(const std::filesystem::path& dir, void (*body)(const uint8_t*, size_t), bool truncations = false);

}  // namespace moepage::test
