// Unicode pieces the byte-level pre-tokenizer needs: UTF-8 decoding that never fails (invalid
// bytes come back as "invalid" with the length of the maximal ill-formed subpart) and the
// character classes \p{L}, \p{N} and \s of the GPT-2 split pattern.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moepage::tokenizer {

struct CodepointRange {
  char32_t first;
  char32_t last;  // inclusive
};

struct Utf8Char {
  char32_t codepoint;  // U+FFFD when !valid
  uint32_t length;     // bytes consumed, >= 1
  bool valid;
};

// Decodes the sequence starting at text[pos] (pos < text.size()). An ill-formed sequence gives
// valid = false and the length of its maximal subpart, as Unicode §3.9 recommends for U+FFFD
// substitution (the same rule as Rust's String::from_utf8_lossy).
Utf8Char decode_utf8(std::string_view text, std::size_t pos);
void append_utf8(std::string& out, char32_t codepoint);
// Bytes -> UTF-8 text with each ill-formed subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view bytes);

bool is_letter(char32_t c);      // general category L*
bool is_number(char32_t c);      // general category N*
bool is_whitespace(char32_t c);  // the White_Space property (what \s matches)

}  // namespace moepage::tokenizer
