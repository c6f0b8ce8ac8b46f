// Equality with Hugging Face `tokenizers` on held-out text of the trained model. The fixture is
// written by tools/train/train.py on the GPU machine: one JSON object per line,
// {"text": ..., "ids": [...]}, made with add_special_tokens=False.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/test_paths.hpp"
#include "tokenizer/tokenizer.hpp"

namespace fs = std::filesystem;

TEST_CASE("encode and decode equal Hugging Face tokenizers on the held-out fixture") {
  const fs::path fixture = moepage::test::fixture_path("tokenizer/heldout_ids.jsonl");
  const fs::path tokenizer_file = moepage::test::source_path("models/ds4-debian-tiny/tokenizer.json");
  if (!fs::exists(fixture)) {
    MESSAGE("skipped: " << fixture.string() << " is absent (made by tools/train/train.py on the GPU machine)");
    return;
  }
  REQUIRE_MESSAGE(fs::exists(tokenizer_file), "the fixture needs " << tokenizer_file.string());
  const auto tokenizer = moepage::tokenizer::Tokenizer::load(tokenizer_file);

  std::ifstream in(fixture);
  std::string line;
  int lines = 0, encode_mismatches = 0, decode_mismatches = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto record = nlohmann::json::parse(line);
    const std::string text = record.at("text").get<std::string>();
    const auto expected = record.at("ids").get<std::vector<int32_t>>();
    const auto ids = tokenizer.encode(text);
    if (ids != expected && ++encode_mismatches <= 5) {
      MESSAGE("encode differs on line " << lines + 1 << ": " << text.substr(0, 120));
    }
    if (tokenizer.decode(expected) != text && ++decode_mismatches <= 5) {
      MESSAGE("decode differs on line " << lines + 1 << ": " << text.substr(0, 120));
    }
    ++lines;
  }
  CHECK(lines >= 1000);
  CHECK(encode_mismatches == 0);
  CHECK(decode_mismatches == 0);
}
