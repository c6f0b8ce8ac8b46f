#include "tokenizer/unicode_classes.hpp"

#include <algorithm>
#include <iterator>

namespace moepage::tokenizer {
namespace detail {
#include "tokenizer/unicode_tables.inc"
}  // namespace detail

namespace {

template <std::size_t N>
bool in_ranges(const CodepointRange (&ranges)[N], char32_t c) {
  // First range whose end is >= c; c is inside when that range also starts at or before it.
  const auto* it = std::lower_bound(std::begin(ranges), std::end(ranges), c,
                                    [](const CodepointRange& r, char32_t v) { return r.last < v; });
  return it != std::end(ranges) && it->first <= c;
}

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

Utf8Char decode_utf8(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {lead, 1, true};
  uint32_t need = 0;
  char32_t cp = 0;
  // Allowed range of the second byte; narrower than 80..BF for E0, ED, F0 and F4 so that
  // overlong forms, surrogates and code points above U+10FFFF are rejected.
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 1;
    cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 2;
    cp = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 3;
    cp = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return {0xFFFD, 1, false};
  }
  uint32_t length = 1;
  for (uint32_t i = 0; i < need; ++i) {
    if (pos + length >= text.size()) return {0xFFFD, length, false};
    const auto b = static_cast<unsigned char>(text[pos + length]);
    const bool ok = i == 0 ? (b >= lo && b <= hi) : is_continuation(b);
    if (!ok) return {0xFFFD, length, false};
    cp = (cp << 6) | (b & 0x3F);
    ++length;
  }
  return {cp, length, true};
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t pos = 0; pos < bytes.size();) {
    const Utf8Char ch = decode_utf8(bytes, pos);
    if (ch.valid) {
      out.append(bytes.substr(pos, ch.length));
    } else {
      append_utf8(out, 0xFFFD);
    }
    pos += ch.length;
  }
  return out;
}

bool is_letter(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  return in_ranges(detail::kLetterRanges, c);
}

bool is_number(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return in_ranges(detail::kNumberRanges, c);
}

bool is_whitespace(char32_t c) {
  switch (c) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return c >= 0x2000 && c <= 0x200A;
  }
}

}  // namespace moepage::tokenizer
