#include "tokenizer/added_tokens.hpp"

#include "tokenizer/unicode_classes.hpp"

namespace moepage::tokenizer {
namespace {

bool is_word_char(char32_t c) { return c == '_' || is_letter(c) || is_number(c); }

// The code point that ends just before byte offset `end` (end > 0).
char32_t char_before(std::string_view text, std::size_t end) {
  std::size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80 && end - start < 4) --start;
  const Utf8Char ch = decode_utf8(text, start);
  return ch.valid && start + ch.length == end ? ch.codepoint : 0xFFFD;
}

std::size_t skip_space_backward(std::string_view text, std::size_t pos, std::size_t floor) {
  while (pos > floor) {
    std::size_t start = pos - 1;
    while (start > floor && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    const Utf8Char ch = decode_utf8(text, start);
    if (!ch.valid || start + ch.length != pos || !is_whitespace(ch.codepoint)) break;
    pos = start;
  }
  return pos;
}

std::size_t skip_space_forward(std::string_view text, std::size_t pos) {
  while (pos < text.size()) {
    const Utf8Char ch = decode_utf8(text, pos);
    if (!ch.valid || !is_whitespace(ch.codepoint)) break;
    pos += ch.length;
  }
  return pos;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)), by_first_byte_(256) {
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    if (!tokens_[i].content.empty()) {
      by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
    }
  }
}

bool AddedTokenMatcher::find_next(std::string_view text, std::size_t from, Match* match) const {
  if (tokens_.empty()) return false;
  for (std::size_t pos = from; pos < text.size(); ++pos) {
    const AddedToken* best = nullptr;
    for (std::size_t index : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
      const AddedToken& token = tokens_[index];
      if (text.substr(pos).starts_with(token.content) &&
          (best == nullptr || token.content.size() > best->content.size())) {
        if (token.single_word) {
          const std::size_t end = pos + token.content.size();
          if (pos > 0 && is_word_char(char_before(text, pos))) continue;
          if (end < text.size() && is_word_char(decode_utf8(text, end).codepoint) && decode_utf8(text, end).valid) {
            continue;
          }
        }
        best = &token;
      }
    }
    if (best != nullptr) {
      match->id = best->id;
      match->begin = best->lstrip ? skip_space_backward(text, pos, from) : pos;
      match->end = pos + best->content.size();
      if (best->rstrip) match->end = skip_space_forward(text, match->end);
      return true;
    }
  }
  return false;
}

std::vector<TextSegment> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<TextSegment> segments;
  std::size_t pos = 0;
  Match match;
  while (find_next(text, pos, &match)) {
    if (match.begin > pos) segments.push_back({text.substr(pos, match.begin - pos), -1});
    segments.push_back({{}, match.id});
    pos = match.end;
  }
  if (pos < text.size()) segments.push_back({text.substr(pos), -1});
  return segments;
}

}  // namespace moepage::tokenizer
