// Added and special tokens ("<|bos|>", ...): matched in the raw text before pre-tokenization,
// leftmost first and longest at a position, so they never reach the BPE merges.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moepage::tokenizer {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool single_word = false;  // only where no letter, digit or '_' touches either side
  bool lstrip = false;       // swallow the whitespace before it
  bool rstrip = false;       // swallow the whitespace after it
};

struct TextSegment {
  std::string_view text;  // the plain text to pre-tokenize; empty for a token
  int32_t token_id = -1;  // >= 0 for an added token
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  // Splits text into plain segments and added tokens, in order.
  std::vector<TextSegment> split(std::string_view text) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Match {
    std::size_t begin = 0, end = 0;  // including any stripped whitespace
    int32_t id = -1;
  };
  bool find_next(std::string_view text, std::size_t from, Match* match) const;

  std::vector<AddedToken> tokens_;
  std::vector<std::vector<std::size_t>> by_first_byte_;  // token indices per first byte
};

}  // namespace moepage::tokenizer
