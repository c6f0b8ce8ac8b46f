// Encoding and decoding with the hand-made tokenizer in tiny_tokenizer.hpp.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "tiny_tokenizer.hpp"

using moepage::tokenizer::StreamDecoder;
using moepage::tokenizer::Tokenizer;

namespace {
std::vector<std::string> tokens(const Tokenizer& t, std::string_view text) {
  std::vector<std::string> out;
  for (int32_t id : t.encode(text)) out.push_back(t.id_to_token(id).value_or("<missing>"));
  return out;
}
using V = std::vector<std::string>;

// Random valid UTF-8 drawn from ASCII, Latin-1, CJK, emoji and whitespace.
std::string random_utf8(std::mt19937& rng, int length) {
  static const char32_t pools[][2] = {{0x20, 0x7E}, {0xA0, 0x24F}, {0x4E00, 0x4FFF}, {0x1F300, 0x1F6FF}, {0x09, 0x0D}};
  std::string s;
  for (int i = 0; i < length; ++i) {
    const auto& pool = pools[rng() % 5];
    moepage::tokenizer::append_utf8(s, pool[0] + char32_t(rng() % (pool[1] - pool[0] + 1)));
  }
  return s;
}
}  // namespace

TEST_CASE("merges apply by rank inside a piece and never across pieces") {
  const Tokenizer t = tiny::make();
  CHECK(tokens(t, "the") == V{"t", "he"});
  CHECK(tokens(t, " the") == V{"Ġthe"});
  // h+e (rank 0) beats e+r (rank 6), then he+r (rank 7): "her", not "h"+"er".
  CHECK(tokens(t, " other's 12") == V{"Ġ", "o", "t", "her", "'s", "Ġ", "12"});
  CHECK(tokens(t, "ever") == V{"e", "v", "er"});
}

TEST_CASE("multiple spaces and newlines encode as the split pattern dictates") {
  const Tokenizer t = tiny::make();
  CHECK(tokens(t, "a   the") == V{"a", "ĠĠ", "Ġthe"});
  CHECK(tokens(t, "a\n\nthe") == V{"a", "Ċ", "Ċ", "t", "he"});
}

TEST_CASE("non-ASCII text falls back to its bytes") {
  const Tokenizer t = tiny::make();
  // é is C3 A9, which map to 'Ã' and '©'.
  CHECK(tokens(t, "\xC3\xA9") == V{"Ã", "©"});
  CHECK(t.encode("\xF0\x9F\x98\x80").size() == 4);  // one emoji, four bytes, no merges
}

TEST_CASE("special tokens in the middle of text are matched before pre-tokenization") {
  const Tokenizer t = tiny::make();
  const auto ids = t.encode("the<|eos|> the<|bos|>");
  CHECK(tokens(t, "the<|eos|> the<|bos|>") == V{"t", "he", "<|eos|>", "Ġthe", "<|bos|>"});
  CHECK(ids[2] == 1);
  CHECK(ids[4] == 0);
  // A near miss is plain text.
  CHECK(tokens(t, "<|eos|").size() == 6);
}

TEST_CASE("decode skips special tokens only when asked") {
  const Tokenizer t = tiny::make();
  const auto ids = t.encode("<|bos|>the other<|eos|>");
  CHECK(t.decode(ids) == "<|bos|>the other<|eos|>");
  CHECK(t.decode(ids, /*skip_special_tokens=*/true) == "the other");
  CHECK(t.is_special(0));
  CHECK_FALSE(t.is_special(ids[1]));
}

TEST_CASE("a template post-processor adds the BOS token only with add_special_tokens") {
  const Tokenizer t = tiny::make(/*with_template=*/true);
  CHECK(t.encode("the").size() == 2);
  const auto framed = t.encode("the", /*add_special_tokens=*/true);
  REQUIRE(framed.size() == 3);
  CHECK(framed[0] == 0);
}

TEST_CASE("decode of encode gives back random UTF-8 text exactly") {
  const Tokenizer t = tiny::make();
  std::mt19937 rng(1234);
  for (int i = 0; i < 300; ++i) {
    const std::string text = random_utf8(rng, 1 + int(rng() % 40));
    CHECK(t.decode(t.encode(text)) == text);
  }
}

TEST_CASE("arbitrary bytes, even ill-formed UTF-8, survive encoding byte for byte") {
  const Tokenizer t = tiny::make();
  std::mt19937 rng(99);
  for (int i = 0; i < 300; ++i) {
    std::string bytes(1 + rng() % 30, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
    std::string joined;
    for (int32_t id : t.encode(bytes)) joined += t.token_bytes(id);
    CHECK(joined == bytes);
    CHECK(t.decode(t.encode(bytes)) == moepage::tokenizer::utf8_lossy(bytes));
  }
}

TEST_CASE("the stream decoder holds back a character split across tokens") {
  const Tokenizer t = tiny::make();
  const std::string text = "a\xF0\x9F\x98\x80 caf\xC3\xA9<|eos|>";
  StreamDecoder stream(t);
  std::string out;
  for (int32_t id : t.encode(text)) {
    const std::string piece = stream.push(id);
    CHECK(piece.find("\xEF\xBF\xBD") == std::string::npos);  // never a premature U+FFFD
    out += piece;
  }
  out += stream.finish();
  CHECK(out == "a\xF0\x9F\x98\x80 caf\xC3\xA9");
}

TEST_CASE("the stream decoder replaces a truncated character at the end") {
  const Tokenizer t = tiny::make();
  StreamDecoder stream(t);
  std::string out;
  for (int32_t id : t.encode("x\xE2\x82")) out += stream.push(id);
  CHECK(out == "x");
  CHECK(stream.finish() == "\xEF\xBF\xBD");
}

TEST_CASE("vocab size counts the added tokens and the merges") {
  const Tokenizer t = tiny::make();
  CHECK(t.vocab_size() == 2 + 256 + tiny::merges().size());
  CHECK(t.token_to_id("<|eos|>") == 1);
  CHECK(t.token_to_id("Ġthe").has_value());
  CHECK_FALSE(t.token_to_id("nope").has_value());
  CHECK_FALSE(t.id_to_token(100000).has_value());
  CHECK(t.decode(std::vector<int32_t>{100000, -5}).empty());
}

TEST_CASE("a very long word without spaces encodes quickly and exactly") {
  // 200,000 letters in one pre-token: merging must not rescan the word after every merge.
  const Tokenizer t = tiny::make();
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "he";
  const auto ids = t.encode(text);
  REQUIRE(ids.size() == 100000);
  CHECK(ids.front() == t.token_to_id("he"));
  CHECK(ids.back() == t.token_to_id("he"));
  CHECK(t.decode(ids) == text);
}
