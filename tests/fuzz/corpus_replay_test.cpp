// Replays the committed seed corpus through the fuzz entry points, plus a few thousand
// deterministic mutations of each seed (flips, truncations, splices), so every CI build with g++
// exercises the parsers on bad input. Seeds named valid-* must parse; bad-* must not.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "deepseek4/model/rng.hpp"
#include "fuzz_entries.hpp"
#include "support/seed_files.hpp"
#include "support/test_paths.hpp"

using Entry = bool (*)(const uint8_t*, size_t);

namespace {

std::vector<moepage::test::SeedFile> seeds(const std::string& target) {
  return moepage::test::seed_files(moepage::test::source_path("tests/fuzz/corpus") / target);
}

// Mutations in the spirit of libFuzzer's, from a fixed seed so failures reproduce.
std::vector<uint8_t> mutate(std::vector<uint8_t> v, moepage::ds4::Rng& rng) {
  static const char* tokens[] = {"{",
                                 "}",
                                 "[",
                                 "]",
                                 "\"",
                                 ",",
                                 ":",
                                 "-1",
                                 "1e308",
                                 "18446744073709551615",
                                 "null",
                                 "\"F8_E4M3\"",
                                 "\"shape\"",
                                 "\"data_offsets\"",
                                 "\"layer_types\"",
                                 "[[[[[[[["};
  const int edits = 1 + int(rng.below(4));
  for (int i = 0; i < edits; ++i) {
    const size_t at = v.empty() ? 0 : rng.below(uint32_t(v.size()));
    switch (rng.below(5)) {
      case 0:
        if (!v.empty()) v[at] ^= uint8_t(1u << rng.below(8));
        break;
      case 1: v.resize(at); break;
      case 2:
        if (!v.empty()) v[at] = uint8_t(rng.next());
        break;
      case 3: {
        const std::string t = tokens[rng.below(sizeof tokens / sizeof *tokens)];
        v.insert(v.begin() + int64_t(at), t.begin(), t.end());
        break;
      }
      default:
        if (v.size() > at + 1)
          v.erase(v.begin() + int64_t(at), v.begin() + int64_t(at + 1 + rng.below(uint32_t(v.size() - at - 1))));
    }
  }
  return v;
}

void replay(const std::string& target, Entry entry) {
  const auto corpus = seeds(target);
  REQUIRE(corpus.size() >= 3);
  moepage::ds4::Rng rng(2024, target);
  // Plain references, not a structured binding: clang 14 (the fuzz build's compiler) does not let
  // CHECK_MESSAGE's lambda capture a binding.
  for (const auto& seed : corpus) {
    const std::string& name = seed.name;
    const auto& bytes = seed.bytes;
    const bool parsed = entry(bytes.data(), bytes.size());
    if (name.rfind("valid-", 0) == 0) CHECK_MESSAGE(parsed, target << "/" << name);
    if (name.rfind("bad-", 0) == 0) CHECK_MESSAGE(!parsed, target << "/" << name);
    for (int i = 0; i < 1500; ++i) {
      const auto m = mutate(bytes, rng);
      entry(m.data(), m.size());  // must neither crash nor throw anything but a CheckpointError
    }
  }
}

}  // namespace

TEST_CASE("the safetensors header seed corpus and its mutations parse or fail with one-line errors") {
  replay("safetensors_header", moepage::fuzz::safetensors_header_one);
}

TEST_CASE("the shard index seed corpus and its mutations parse or fail with one-line errors") {
  replay("shard_index", moepage::fuzz::shard_index_one);
}

TEST_CASE("the config.json seed corpus and its mutations parse or fail with one-line errors") {
  replay("config_json", moepage::fuzz::config_json_one);
}
