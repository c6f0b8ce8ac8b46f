// Replays the committed seeds of the ablation-spec and generation_config.json fuzzers, and every
// truncation of each seed, through the fuzz bodies with the ordinary compiler (and under ASan in
// the sanitizer pass), so CI keeps what fuzzing found.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz_entries.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

size_t replay_dir(const char* sub, void (*body)(const uint8_t*, size_t)) {
  const fs::path dir = fs::path(MOEPAGE_SOURCE_DIR) / "tests/fuzz-spec/seeds" / sub;
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto bytes = read_bytes(entry.path());
    CAPTURE(entry.path().string());
    for (size_t cut = 0; cut <= bytes.size(); cut += 1 + bytes.size() / 64) {
      CHECK_NOTHROW(body(bytes.data(), cut));
    }
    CHECK_NOTHROW(body(bytes.data(), bytes.size()));
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("every committed ablation-spec seed and its truncations are parsed or refused cleanly") {
  CHECK(replay_dir("ablation_spec", moepage::fuzz::ablation_spec_input) >= 3);
}

TEST_CASE("every committed generation_config.json seed and its truncations are applied or refused cleanly") {
  CHECK(replay_dir("generation_config", moepage::fuzz::generation_config_input) >= 3);
}

TEST_CASE("the generation_config body refuses nothing valid and lets no wrong type through") {
  const std::string valid = R"({"do_sample": true, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "max_new_tokens": 64})";
  CHECK_NOTHROW(moepage::fuzz::generation_config_input(reinterpret_cast<const uint8_t*>(valid.data()), valid.size()));
}
