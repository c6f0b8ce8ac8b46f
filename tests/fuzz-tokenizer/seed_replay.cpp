// Replays the fuzz seeds (and any crash reproducers saved next to them) through the fuzz entry
// with the normal compiler, so CI covers them without clang or libFuzzer.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

TEST_CASE("every tokenizer fuzz seed loads or is refused cleanly") {
  namespace fs = std::filesystem;
  int seeds = 0;
  for (const auto& entry : fs::directory_iterator(MOEPAGE_TOKENIZER_SEEDS)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO("seed " << entry.path().filename().string());
    CHECK(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) == 0);
    ++seeds;
  }
  CHECK(seeds >= 8);
}

TEST_CASE("the valid seeds load and the broken ones are refused") {
  namespace fs = std::filesystem;
  const fs::path dir(MOEPAGE_TOKENIZER_SEEDS);
  CHECK(moepage::tokenizer::Tokenizer::load(dir / "valid_string_merges.json").vocab_size() == 261);
  CHECK(moepage::tokenizer::Tokenizer::load(dir / "template_and_strip.json").encode("the", true).front() == 0);
  for (const char* bad : {"merge_out_of_vocab.json", "wrong_model_type.json", "truncated.json",
                          "not_an_object.json", "negative_id.json"}) {
    INFO(bad);
    CHECK_THROWS_AS(moepage::tokenizer::Tokenizer::load(dir / bad), moepage::tokenizer::TokenizerError);
  }
}
