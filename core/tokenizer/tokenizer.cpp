#include "tokenizer/tokenizer.hpp"

#include <unordered_map>
#include <unordered_set>

#include "fileio/text_file.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/pretokenize.hpp"
#include "tokenizer/tokenizer_json.hpp"
#include "tokenizer/unicode_classes.hpp"

namespace moepage::tokenizer {

struct Tokenizer::Impl {
  BpeModel bpe;
  AddedTokenMatcher added;
  std::unordered_map<int32_t, std::string> added_content;  // id -> content
  std::unordered_map<std::string, int32_t> added_ids;      // content -> id
  std::unordered_set<int32_t> special_ids;
  bool add_prefix_space = false;
  bool use_regex = true;
  std::vector<TemplateItem> single_template;
  uint32_t vocab_size = 0;

  explicit Impl(const TokenizerSpec& spec) : bpe(spec.bpe), added(spec.added_tokens) {
    add_prefix_space = spec.add_prefix_space;
    use_regex = spec.use_regex;
    single_template = spec.single_template;
    vocab_size = uint32_t(bpe.max_id() + 1);
    for (const AddedToken& token : spec.added_tokens) {
      added_content[token.id] = token.content;
      added_ids[token.content] = token.id;
      if (token.special) special_ids.insert(token.id);
      vocab_size = std::max(vocab_size, uint32_t(token.id) + 1);
    }
  }

  void encode_plain(std::string_view text, std::vector<int32_t>& out) const {
    std::string prefixed;
    if (add_prefix_space && !text.empty() && text.front() != ' ') {
      // GCC 12 at -O2 and above reports a bogus -Wrestrict overlap inside libstdc++ for a literal
      // plus a std::string; nothing overlaps here.
#if defined(__GNUC__) && !defined(__clang__)  // clang knows no such warning: it would warn of the name
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
      prefixed = " " + std::string(text);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
      text = prefixed;
    }
    if (!use_regex) {
      bpe.encode_word(bytes_to_mapped(text), out);
      return;
    }
    for (std::string_view word : split_gpt2(text)) bpe.encode_word(bytes_to_mapped(word), out);
  }

  // The string the decoder sees for an id: an added token's content or the vocab entry.
  const std::string* token_text(int32_t id) const {
    if (const auto it = added_content.find(id); it != added_content.end()) return &it->second;
    return bpe.id_to_token(id);
  }
};

Tokenizer Tokenizer::load(const std::filesystem::path& path) {
  const std::optional<std::string> text = fileio::try_read_file(path);
  if (!text) throw TokenizerError(path.string() + ": cannot open tokenizer file");
  return parse(*text, path.string());
}

Tokenizer Tokenizer::parse(std::string_view json_text, const std::string& origin) {
  const TokenizerSpec spec = parse_tokenizer_json(json_text, origin);
  try {
    return Tokenizer(spec);
  } catch (const std::invalid_argument& e) {
    throw TokenizerError(origin + ": " + e.what());
  }
}

Tokenizer::Tokenizer(const TokenizerSpec& spec) : impl_(std::make_unique<Impl>(spec)) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const TextSegment& segment : impl_->added.split(text)) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
    } else {
      impl_->encode_plain(segment.text, ids);
    }
  }
  if (!add_special_tokens || impl_->single_template.empty()) return ids;
  std::vector<int32_t> framed;
  framed.reserve(ids.size() + 4);
  for (const TemplateItem& item : impl_->single_template) {
    const auto& part = item.is_sequence ? ids : item.ids;
    framed.insert(framed.end(), part.begin(), part.end());
  }
  return framed;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  const std::string* text = impl_->token_text(id);
  if (text == nullptr) return {};
  // A token made only of mapped-byte characters stands for those bytes; any other token (an
  // added token such as "<|bos|>" with characters outside the map) for its own UTF-8 text.
  if (auto bytes = mapped_to_bytes(*text)) return std::move(*bytes);
  return *text;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (skip_special_tokens && is_special(id)) continue;
    bytes += token_bytes(id);
  }
  return utf8_lossy(bytes);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const auto it = impl_->added_ids.find(std::string(token)); it != impl_->added_ids.end()) return it->second;
  return impl_->bpe.token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  const std::string* text = impl_->token_text(id);
  if (text == nullptr) return std::nullopt;
  return *text;
}

bool Tokenizer::is_special(int32_t id) const { return impl_->special_ids.count(id) != 0; }

uint32_t Tokenizer::vocab_size() const { return impl_->vocab_size; }

std::string StreamDecoder::push(int32_t id) {
  if (skip_special_ && tokenizer_.is_special(id)) return {};
  pending_ += tokenizer_.token_bytes(id);
  // Emit everything up to the start of a trailing sequence that is still well-formed but
  // incomplete; ill-formed bytes are final and become U+FFFD right away.
  std::size_t complete = 0;
  for (std::size_t pos = 0; pos < pending_.size();) {
    const Utf8Char ch = decode_utf8(pending_, pos);
    if (!ch.valid && pos + ch.length == pending_.size()) {
      // Ill-formed only because the input ends here? Then wait for more bytes.
      const auto lead = static_cast<unsigned char>(pending_[pos]);
      const uint32_t expected = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 1;
      if (lead >= 0xC2 && lead <= 0xF4 && ch.length < expected) break;
    }
    pos += ch.length;
    complete = pos;
  }
  std::string out = utf8_lossy(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out = utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace moepage::tokenizer
