#include "tokenizer/pretokenize.hpp"

#include "tokenizer/unicode_classes.hpp"

namespace moepage::tokenizer {
namespace {

enum class CharClass { Letter, Number, Space, Other };

struct Scanner {
  std::string_view text;

  CharClass class_at(std::size_t pos, uint32_t* length) const {
    const Utf8Char ch = decode_utf8(text, pos);
    *length = ch.length;
    if (!ch.valid) return CharClass::Other;
    if (is_letter(ch.codepoint)) return CharClass::Letter;
    if (is_number(ch.codepoint)) return CharClass::Number;
    if (is_whitespace(ch.codepoint)) return CharClass::Space;
    return CharClass::Other;
  }

  // End of the run of characters of class `cls` starting at pos (pos itself when none).
  std::size_t run_end(std::size_t pos, CharClass cls) const {
    while (pos < text.size()) {
      uint32_t length = 0;
      if (class_at(pos, &length) != cls) break;
      pos += length;
    }
    return pos;
  }

  // 's 't 're 've 'm 'll 'd (lowercase only, as in the pattern): length matched or 0.
  std::size_t contraction(std::size_t pos) const {
    if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
    const char a = text[pos + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= text.size()) return 0;
    const char b = text[pos + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  }

  // Length of the piece that starts at pos (> 0).
  std::size_t piece(std::size_t pos) const {
    if (const std::size_t n = contraction(pos)) return n;
    // " ?X+" for X in letter, number, other: an optional single U+0020, then a run of X.
    std::size_t body = pos;
    if (text[pos] == ' ' && pos + 1 < text.size()) body = pos + 1;
    for (std::size_t start : {body, pos}) {
      uint32_t length = 0;
      const CharClass cls = class_at(start, &length);
      if (cls != CharClass::Space) return run_end(start, cls) - pos;
      if (start == pos) break;
    }
    // Whitespace: \s+(?!\S) takes the run but gives back its last character when a
    // non-space follows, so that character can lead the next word; a single space before a
    // non-space falls through to \s+ and stands alone.
    const std::size_t end = run_end(pos, CharClass::Space);
    if (end == text.size()) return end - pos;
    std::size_t last = pos;  // start of the last whitespace character in the run
    for (std::size_t p = pos; p < end;) {
      last = p;
      p += decode_utf8(text, p).length;
    }
    return last > pos ? last - pos : end - pos;
  }
};

}  // namespace

std::vector<std::string_view> split_gpt2(std::string_view text) {
  std::vector<std::string_view> pieces;
  const Scanner scanner{text};
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t n = scanner.piece(pos);
    pieces.push_back(text.substr(pos, n));
    pos += n;
  }
  return pieces;
}

}  // namespace moepage::tokenizer
