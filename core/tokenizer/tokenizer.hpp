// moepage's own reader of a Hugging Face tokenizer.json for byte-level BPE (GPT-2 style):
// model.vocab and model.merges, added/special tokens, the ByteLevel pre-tokenizer with its
// split pattern, an optional template post-processor (e.g. a BOS token) and the ByteLevel
// decoder. Anything else in the file is refused with an error naming the file and key, so a
// tokenizer that would encode differently from Hugging Face never loads silently.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace moepage::tokenizer {

class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TokenizerSpec;  // parsed tokenizer.json (tokenizer_json.hpp)

class Tokenizer {
 public:
  // Throws TokenizerError("<path>: ...") for an unreadable file, bad JSON, a missing or
  // mistyped key, or an unsupported component.
  static Tokenizer load(const std::filesystem::path& path);
  // `origin` names the source in error messages.
  static Tokenizer parse(std::string_view json_text, const std::string& origin);

  explicit Tokenizer(const TokenizerSpec& spec);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Never fails: any byte string encodes (byte-level BPE covers all 256 bytes). With
  // add_special_tokens the post-processor's template (e.g. a leading BOS) is applied.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  // UTF-8 text of the ids; ill-formed byte sequences become U+FFFD; unknown ids are skipped.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;
  // The exact bytes one token stands for (empty for an unknown id); streaming output joins these.
  std::string token_bytes(int32_t id) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  // Largest id + 1 over the vocabulary and the added tokens.
  uint32_t vocab_size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Turns a stream of ids into printable UTF-8 pieces: bytes of a character split across tokens
// are held back until the character is complete, so each piece can be written out at once.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = true)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}
  // Text that is complete after this id (possibly empty).
  std::string push(int32_t id);
  // Whatever is still held back, with U+FFFD for an incomplete character.
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace moepage::tokenizer
