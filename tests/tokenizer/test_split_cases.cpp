// The hand-written splitter against Python's regex engine on the same pattern
// (split_cases.jsonl, made by gen_split_cases.py): fixed tricky cases and random mixtures of
// letters, digits, punctuation, Unicode spaces, CJK, emoji and apostrophes.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/test_paths.hpp"
#include "tokenizer/pretokenize.hpp"

TEST_CASE("the splitter agrees with a regex engine on every recorded case") {
  std::ifstream in(moepage::test::source_path("tests/tokenizer/split_cases.jsonl"));
  REQUIRE(in.good());
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    const auto record = nlohmann::json::parse(line);
    const std::string text = record.at("text").get<std::string>();
    const auto expected = record.at("pieces").get<std::vector<std::string>>();
    std::vector<std::string> got;
    for (auto piece : moepage::tokenizer::split_gpt2(text)) got.emplace_back(piece);
    INFO("case " << cases << ": " << record.at("text").dump());
    CHECK(got == expected);
    ++cases;
  }
  CHECK(cases >= 400);
}
