// The ByteLevel pre-tokenizer's word splitter: the GPT-2 pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// implemented by hand (no std::regex: it has no \p classes and backtracks badly). Alternatives
// are tried in order at each position, as a backtracking regex engine does.
#pragma once
#include <string_view>
#include <vector>

namespace moepage::tokenizer {

// Splits text into consecutive, non-empty pieces whose concatenation is the text. Ill-formed
// UTF-8 never fails: each ill-formed subpart counts as one symbol (neither letter, number nor
// space), so its bytes still reach the byte-level mapping unchanged.
std::vector<std::string_view> split_gpt2(std::string_view text);

}  // namespace moepage::tokenizer
