// The GPT-2 split pattern, case by case. Expected pieces follow the regex semantics of
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ .
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tokenizer/pretokenize.hpp"
#include "tokenizer/unicode_classes.hpp"

using moepage::tokenizer::split_gpt2;

namespace {
std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (auto p : split_gpt2(text)) out.emplace_back(p);
  return out;
}
using V = std::vector<std::string>;
}  // namespace

TEST_CASE("lowercase contractions split off and uppercase ones do not") {
  CHECK(pieces("I'm here, they'll go") == V{"I", "'m", " here", ",", " they", "'ll", " go"});
  CHECK(pieces("we're you've he'd it's don't") ==
        V{"we", "'re", " you", "'ve", " he", "'d", " it", "'s", " don", "'t"});
  CHECK(pieces("DON'T") == V{"DON", "'", "T"});
  CHECK(pieces("'sup") == V{"'s", "up"});
  CHECK(pieces("?'s") == V{"?'", "s"});
}

TEST_CASE("digits form their own pieces, separate from letters") {
  CHECK(pieces("abc123 456") == V{"abc", "123", " 456"});
  CHECK(pieces("x86_64") == V{"x", "86", "_", "64"});
  CHECK(pieces("\xC2\xBD \xD9\xA3") == V{"\xC2\xBD", " \xD9\xA3"});  // ½ and Arabic-Indic three
}

TEST_CASE("punctuation runs stay together and take one leading space") {
  CHECK(pieces("Hello!!! ...?") == V{"Hello", "!!!", " ...?"});
  CHECK(pieces("a->b") == V{"a", "->", "b"});
}

TEST_CASE("runs of spaces give their last space to the next word") {
  CHECK(pieces("a   b") == V{"a", "  ", " b"});
  CHECK(pieces("a b") == V{"a", " b"});
  CHECK(pieces("a  ") == V{"a", "  "});
  CHECK(pieces("   ") == V{"   "});
}

TEST_CASE("newlines and tabs stand apart from the word that follows") {
  CHECK(pieces("a\n\nb") == V{"a", "\n", "\n", "b"});
  CHECK(pieces("a\n\n b") == V{"a", "\n\n", " b"});
  CHECK(pieces("\tx") == V{"\t", "x"});
  CHECK(pieces("end\n") == V{"end", "\n"});
  CHECK(pieces("a\xC2\xA0"
               "b") == V{"a", "\xC2\xA0", "b"});  // no-break space is \s, not ' '
}

TEST_CASE("non-ASCII letters are letters") {
  CHECK(pieces("na\xC3\xAFve caf\xC3\xA9 \xCE\xA9mega") == V{"na\xC3\xAFve", " caf\xC3\xA9", " \xCE\xA9mega"});
  CHECK(pieces("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E") == V{"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"});  // 日本語
}

TEST_CASE("emoji are symbols and join the punctuation run") {
  // "hi 👋🏽!" : the wave and its skin-tone modifier are neither letters nor numbers.
  CHECK(pieces("hi \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!") == V{"hi", " \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!"});
}

TEST_CASE("ill-formed UTF-8 bytes are kept as symbols, never dropped") {
  CHECK(pieces("a\xFF"
               "b") == V{"a", "\xFF", "b"});
  CHECK(pieces("ab\xE2\x82") == V{"ab", "\xE2\x82"});
}

TEST_CASE("the pieces always cover the text exactly") {
  const std::string text = "It's 2024: caf\xC3\xA9s  \n\t re-open!! \xF0\x9F\x8E\x89 x\xFF";
  std::string joined;
  for (auto p : split_gpt2(text)) {
    CHECK(!p.empty());
    joined += p;
  }
  CHECK(joined == text);
}

TEST_CASE("the Unicode classes match the general categories") {
  using namespace moepage::tokenizer;
  CHECK(is_letter(U'A'));
  CHECK(is_letter(U'\u00E9'));
  CHECK(is_letter(U'\u65E5'));
  CHECK_FALSE(is_letter(U'1'));
  CHECK_FALSE(is_letter(U'\u00D7'));  // multiplication sign is Sm
  CHECK(is_number(U'\u00BD'));
  CHECK(is_number(U'\u2167'));  // Roman numeral eight, Nl
  CHECK_FALSE(is_number(U'x'));
  CHECK(is_whitespace(U'\u3000'));
  CHECK(is_whitespace(U'\u0085'));
  CHECK_FALSE(is_whitespace(U'\u001F'));  // Python's isspace says yes; \s does not
  CHECK_FALSE(is_whitespace(U'\u200B'));  // zero-width space is Cf
}
