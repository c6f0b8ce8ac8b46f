#include "tokenizer/byte_level.hpp"

#include <array>

#include "tokenizer/unicode_classes.hpp"

namespace moepage::tokenizer {
namespace {

bool maps_to_itself(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 512> to_byte{};  // every mapped character is below U+0200

  Tables() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      to_char[b] = maps_to_itself(b) ? char32_t(b) : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_char(uint8_t byte) { return tables().to_char[byte]; }

std::optional<uint8_t> char_to_byte(char32_t c) {
  if (c >= tables().to_byte.size() || tables().to_byte[c] < 0) return std::nullopt;
  return static_cast<uint8_t>(tables().to_byte[c]);
}

std::string bytes_to_mapped(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) append_utf8(out, byte_to_char(static_cast<uint8_t>(b)));
  return out;
}

std::optional<std::string> mapped_to_bytes(std::string_view mapped) {
  std::string out;
  out.reserve(mapped.size());
  for (std::size_t pos = 0; pos < mapped.size();) {
    const Utf8Char ch = decode_utf8(mapped, pos);
    if (!ch.valid) return std::nullopt;
    const auto byte = char_to_byte(ch.codepoint);
    if (!byte) return std::nullopt;
    out += static_cast<char>(*byte);
    pos += ch.length;
  }
  return out;
}

}  // namespace moepage::tokenizer
