// Bad tokenizer.json files give one-line errors naming the file and the key.
#include <doctest/doctest.h>

#include <string>

#include "tiny_tokenizer.hpp"

using moepage::tokenizer::Tokenizer;
using moepage::tokenizer::TokenizerError;

namespace {
std::string error_of(const std::string& text) {
  try {
    (void)Tokenizer::parse(text, "m/tokenizer.json");
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "no error";
}
std::string error_of(const nlohmann::json& j) { return error_of(j.dump()); }
}  // namespace

TEST_CASE("text that is not JSON gives an error naming the file") {
  const std::string e = error_of(std::string("{\"model\": "));
  CHECK(e.find("m/tokenizer.json") != std::string::npos);
  CHECK(e.find("not valid JSON") != std::string::npos);
}

TEST_CASE("a non-BPE model type is refused by key") {
  auto j = tiny::json();
  j["model"]["type"] = "WordPiece";
  CHECK(error_of(j).find("key 'model.type'") != std::string::npos);
  CHECK(error_of(j).find("WordPiece") != std::string::npos);
}

TEST_CASE("a missing vocab or merges names the key") {
  auto j = tiny::json();
  j["model"].erase("vocab");
  CHECK(error_of(j) == "m/tokenizer.json: key 'model.vocab': missing");
  j = tiny::json();
  j["model"]["merges"] = 3;
  CHECK(error_of(j) == "m/tokenizer.json: key 'model.merges': expected an array");
}

TEST_CASE("a malformed merge entry names its index") {
  auto j = tiny::json();
  j["model"]["merges"][2] = "a b c";
  CHECK(error_of(j).find("key 'model.merges[2]'") != std::string::npos);
  j = tiny::json();
  j["model"]["merges"][0] = nlohmann::json::array({"h", 5});
  CHECK(error_of(j).find("key 'model.merges[0][1]': expected a string") != std::string::npos);
}

TEST_CASE("merges in the pair form load like the string form") {
  auto j = tiny::json();
  for (auto& m : j["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    m = nlohmann::json::array({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  const Tokenizer pairs = Tokenizer::parse(j.dump(), "pairs");
  const Tokenizer strings = tiny::make();
  CHECK(pairs.encode(" the other's") == strings.encode(" the other's"));
}

TEST_CASE("a merge of tokens outside the vocab is refused") {
  auto j = tiny::json();
  j["model"]["merges"].push_back("zz q");
  const std::string e = error_of(j);
  CHECK(e.find("m/tokenizer.json") != std::string::npos);
  CHECK(e.find("'zz'") != std::string::npos);
}

TEST_CASE("a token id that is not a non-negative integer is refused") {
  auto j = tiny::json();
  j["model"]["vocab"]["h"] = "seven";
  CHECK(error_of(j).find("key 'model.vocab.h': expected an integer token id") != std::string::npos);
  j = tiny::json();
  j["added_tokens"][0]["id"] = -1;
  CHECK(error_of(j).find("key 'added_tokens[0].id'") != std::string::npos);
  j = tiny::json();
  j["model"]["vocab"]["h"] = 1 << 30;
  CHECK(error_of(j).find("out of range") == std::string::npos);       // in int32 range...
  CHECK(error_of(j).find("has id 1073741824") != std::string::npos);  // ...but beyond the table bound
}

TEST_CASE("components that would change the encoding are refused") {
  auto j = tiny::json();
  j["normalizer"] = {{"type", "NFC"}};
  CHECK(error_of(j).find("key 'normalizer'") != std::string::npos);
  j = tiny::json();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  CHECK(error_of(j).find("key 'pre_tokenizer.type'") != std::string::npos);
  j = tiny::json();
  j["model"]["dropout"] = 0.1;
  CHECK(error_of(j).find("key 'model.dropout'") != std::string::npos);
  j = tiny::json();
  j["decoder"] = nullptr;
  CHECK(error_of(j).find("key 'decoder'") != std::string::npos);
}

TEST_CASE("a missing tokenizer file gives an error naming the path") {
  try {
    (void)Tokenizer::load("/nonexistent/dir/tokenizer.json");
    FAIL("expected an error");
  } catch (const TokenizerError& e) {
    CHECK(std::string(e.what()).find("/nonexistent/dir/tokenizer.json") != std::string::npos);
  }
}

TEST_CASE("a number too large for any integer type is a JSON error, not a crash") {
  const std::string e = error_of(std::string("{\"model\": {\"vocab\": {\"a\": ") + std::string(400, '4') + "}}}");
  CHECK(e.find("m/tokenizer.json: not valid JSON") == 0);
}
