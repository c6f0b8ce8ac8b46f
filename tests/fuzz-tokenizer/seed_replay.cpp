// Replays the fuzz seeds (and any crash reproducers saved next to them) through the fuzz entry
// with the normal compiler, so CI covers them without clang or libFuzzer.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "support/seed_files.hpp"
#include "support/test_paths.hpp"
#include "tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {
std::filesystem::path seed_dir() { return moepage::test::source_path("tests/fuzz-tokenizer/seeds"); }
}  // namespace

TEST_CASE("every tokenizer fuzz seed loads or is refused cleanly") {
  int seeds = 0;
  for (const moepage::test::SeedFile& seed : moepage::test::seed_files(seed_dir())) {
    INFO("seed " << seed.name);
    CHECK(LLVMFuzzerTestOneInput(seed.bytes.data(), seed.bytes.size()) == 0);
    ++seeds;
  }
  CHECK(seeds >= 8);
}

TEST_CASE("the valid seeds load and the broken ones are refused") {
  namespace fs = std::filesystem;
  const fs::path dir = seed_dir();
  CHECK(moepage::tokenizer::Tokenizer::load(dir / "valid_string_merges.json").vocab_size() == 261);
  CHECK(moepage::tokenizer::Tokenizer::load(dir / "template_and_strip.json").encode("the", true).front() == 0);
  for (const char* bad : {"merge_out_of_vocab.json", "wrong_model_type.json", "truncated.json", "not_an_object.json",
                          "negative_id.json"}) {
    INFO(bad);
    CHECK_THROWS_AS(moepage::tokenizer::Tokenizer::load(dir / bad), moepage::tokenizer::TokenizerError);
  }
}
