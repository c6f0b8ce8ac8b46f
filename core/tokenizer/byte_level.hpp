// GPT-2's reversible byte <-> printable character mapping used by byte-level BPE: bytes that
// are printable Latin-1 map to themselves, the other 68 map to U+0100.. in byte order, so every
// byte string becomes a string of visible characters (a space becomes U+0120 'Ġ').
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moepage::tokenizer {

char32_t byte_to_char(uint8_t byte);
std::optional<uint8_t> char_to_byte(char32_t c);
// Each byte replaced by its mapped character, UTF-8 encoded.
std::string bytes_to_mapped(std::string_view bytes);
// The inverse for a token's text: its bytes when every character is a mapped byte, nullopt
// otherwise (such a token, e.g. an added token, then stands for its own UTF-8 text).
std::optional<std::string> mapped_to_bytes(std::string_view mapped);

}  // namespace moepage::tokenizer
