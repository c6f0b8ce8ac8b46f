// tokenizer.json -> TokenizerSpec: the parsing and validation half of the tokenizer, kept apart
// from encoding so that the fuzz target exercises exactly what a user's file goes through.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.hpp"
#include "tokenizer/bpe.hpp"

namespace moepage::tokenizer {

struct TemplateItem {
  bool is_sequence = false;  // the input text's ids
  std::vector<int32_t> ids;  // the special token's ids otherwise
};

struct TokenizerSpec {
  BpeSpec bpe;
  std::vector<AddedToken> added_tokens;
  bool add_prefix_space = false;              // ByteLevel: prepend ' ' to text that does not start with one
  bool use_regex = true;                      // ByteLevel: split with the GPT-2 pattern first
  std::vector<TemplateItem> single_template;  // empty: no post-processing
};

// Throws TokenizerError("<origin>: key '<path>': <what was expected>").
TokenizerSpec parse_tokenizer_json(std::string_view json_text, const std::string& origin);

}  // namespace moepage::tokenizer
