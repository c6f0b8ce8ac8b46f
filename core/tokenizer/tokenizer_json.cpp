#include "tokenizer/tokenizer_json.hpp"

#include <map>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.hpp"

namespace moepage::tokenizer {
namespace {

using nlohmann::json;

// Every accessor takes the dotted key path so errors say exactly where the file is wrong.
class Reader {
 public:
  explicit Reader(const std::string& origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& key, const std::string& expected) const {
    throw TokenizerError(origin_ + ": key '" + key + "': " + expected);
  }

  const json& member(const json& object, const std::string& path, const char* name) const {
    const auto it = object.find(name);
    if (it == object.end()) fail(join(path, name), "missing");
    return *it;
  }
  const json* optional_member(const json& object, const char* name) const {
    const auto it = object.find(name);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  }
  const json& object(const json& value, const std::string& path) const {
    if (!value.is_object()) fail(path, "expected an object");
    return value;
  }
  const json& array(const json& value, const std::string& path) const {
    if (!value.is_array()) fail(path, "expected an array");
    return value;
  }
  std::string string(const json& value, const std::string& path) const {
    if (!value.is_string()) fail(path, "expected a string");
    return value.get<std::string>();
  }
  int32_t id(const json& value, const std::string& path) const {
    if (!value.is_number_integer()) fail(path, "expected an integer token id");
    const auto v = value.get<int64_t>();
    if (v < 0 || v > INT32_MAX) fail(path, "token id " + std::to_string(v) + " is out of range");
    return static_cast<int32_t>(v);
  }
  bool flag(const json& object, const std::string& path, const char* name, bool fallback) const {
    const json* v = optional_member(object, name);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(join(path, name), "expected true or false");
    return v->get<bool>();
  }
  std::string type_of(const json& component, const std::string& path) const {
    object(component, path);
    return string(member(component, path, "type"), join(path, "type"));
  }
  static std::string join(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }

 private:
  const std::string& origin_;
};

void read_model(const Reader& r, const json& model, BpeSpec& bpe) {
  const std::string path = "model";
  r.object(model, path);
  if (const json* type = r.optional_member(model, "type")) {
    const std::string t = r.string(*type, "model.type");
    if (t != "BPE") r.fail("model.type", "unsupported model type '" + t + "', expected 'BPE'");
  }
  const json& vocab = r.object(r.member(model, path, "vocab"), "model.vocab");
  bpe.vocab.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    bpe.vocab.emplace_back(token, r.id(id, "model.vocab." + token));
  }
  const json& merges = r.array(r.member(model, path, "merges"), "model.merges");
  bpe.merges.reserve(merges.size());
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const std::string key = "model.merges[" + std::to_string(i) + "]";
    const json& merge = merges[i];
    if (merge.is_string()) {
      // Legacy form "left right": exactly one space, since byte-level tokens never hold one.
      const std::string text = merge.get<std::string>();
      const auto space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        r.fail(key, "expected \"left right\" with exactly one space");
      }
      bpe.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2) {
      bpe.merges.emplace_back(r.string(merge[0], key + "[0]"), r.string(merge[1], key + "[1]"));
    } else {
      r.fail(key, "expected \"left right\" or [left, right]");
    }
  }
  if (const json* dropout = r.optional_member(model, "dropout")) {
    if (!dropout->is_number() || dropout->get<double>() != 0.0) {
      r.fail("model.dropout", "BPE dropout is random and unsupported; expected null");
    }
  }
  if (const json* unk = r.optional_member(model, "unk_token")) bpe.unk_token = r.string(*unk, "model.unk_token");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (const json* v = r.optional_member(model, affix)) {
      if (!r.string(*v, Reader::join(path, affix)).empty()) {
        r.fail(Reader::join(path, affix), "unsupported in byte-level BPE; expected null");
      }
    }
  }
  if (r.flag(model, path, "byte_fallback", false)) {
    r.fail("model.byte_fallback", "unsupported (byte-level BPE covers every byte); expected false");
  }
  bpe.ignore_merges = r.flag(model, path, "ignore_merges", false);
}

void read_added_tokens(const Reader& r, const json& root, std::vector<AddedToken>& out) {
  const json* list = r.optional_member(root, "added_tokens");
  if (list == nullptr) return;
  r.array(*list, "added_tokens");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    const json& entry = r.object((*list)[i], path);
    AddedToken token;
    token.id = r.id(r.member(entry, path, "id"), path + ".id");
    token.content = r.string(r.member(entry, path, "content"), path + ".content");
    if (token.content.empty()) r.fail(path + ".content", "expected a non-empty string");
    token.special = r.flag(entry, path, "special", false);
    token.single_word = r.flag(entry, path, "single_word", false);
    token.lstrip = r.flag(entry, path, "lstrip", false);
    token.rstrip = r.flag(entry, path, "rstrip", false);
    out.push_back(std::move(token));
  }
}

void read_byte_level_pre_tokenizer(const Reader& r, const json& component, const std::string& path,
                                   TokenizerSpec& spec) {
  spec.add_prefix_space = r.flag(component, path, "add_prefix_space", true);
  spec.use_regex = r.flag(component, path, "use_regex", true);
}

void read_pre_tokenizer(const Reader& r, const json& root, TokenizerSpec& spec) {
  const json* component = r.optional_member(root, "pre_tokenizer");
  if (component == nullptr) r.fail("pre_tokenizer", "missing; expected a ByteLevel pre-tokenizer");
  const std::string type = r.type_of(*component, "pre_tokenizer");
  if (type == "ByteLevel") return read_byte_level_pre_tokenizer(r, *component, "pre_tokenizer", spec);
  if (type == "Sequence") {
    const json& list = r.array(r.member(*component, "pre_tokenizer", "pretokenizers"), "pre_tokenizer.pretokenizers");
    if (list.size() == 1 && r.type_of(list[0], "pre_tokenizer.pretokenizers[0]") == "ByteLevel") {
      return read_byte_level_pre_tokenizer(r, list[0], "pre_tokenizer.pretokenizers[0]", spec);
    }
    r.fail("pre_tokenizer.pretokenizers", "unsupported sequence; expected exactly one ByteLevel");
  }
  r.fail("pre_tokenizer.type", "unsupported pre-tokenizer '" + type + "', expected 'ByteLevel'");
}

void read_template(const Reader& r, const json& component, const std::string& path, TokenizerSpec& spec) {
  std::map<std::string, std::vector<int32_t>> specials;
  if (const json* table = r.optional_member(component, "special_tokens")) {
    r.object(*table, path + ".special_tokens");
    for (const auto& [name, entry] : table->items()) {
      const std::string entry_path = path + ".special_tokens." + name;
      const json& ids = r.array(r.member(r.object(entry, entry_path), entry_path, "ids"), entry_path + ".ids");
      std::vector<int32_t>& out = specials[name];
      for (std::size_t i = 0; i < ids.size(); ++i) out.push_back(r.id(ids[i], entry_path + ".ids"));
    }
  }
  const json& single = r.array(r.member(component, path, "single"), path + ".single");
  for (std::size_t i = 0; i < single.size(); ++i) {
    const std::string item_path = path + ".single[" + std::to_string(i) + "]";
    const json& item = r.object(single[i], item_path);
    TemplateItem parsed;
    if (item.contains("Sequence")) {
      parsed.is_sequence = true;
    } else if (item.contains("SpecialToken")) {
      const json& special = r.object(item["SpecialToken"], item_path + ".SpecialToken");
      const std::string name =
          r.string(r.member(special, item_path + ".SpecialToken", "id"), item_path + ".SpecialToken.id");
      const auto it = specials.find(name);
      if (it == specials.end()) r.fail(item_path, "special token '" + name + "' is not in special_tokens");
      parsed.ids = it->second;
    } else {
      r.fail(item_path, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
    spec.single_template.push_back(std::move(parsed));
  }
}

void read_post_processor(const Reader& r, const json& component, const std::string& path, TokenizerSpec& spec) {
  const std::string type = r.type_of(component, path);
  if (type == "ByteLevel") return;  // only adjusts offsets, never ids
  if (type == "TemplateProcessing") return read_template(r, component, path, spec);
  if (type == "Sequence") {
    const json& list = r.array(r.member(component, path, "processors"), path + ".processors");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string item_path = path + ".processors[" + std::to_string(i) + "]";
      if (r.type_of(list[i], item_path) == "Sequence") r.fail(item_path, "nested sequences are unsupported");
      read_post_processor(r, list[i], item_path, spec);
    }
    return;
  }
  r.fail(path + ".type", "unsupported post-processor '" + type + "', expected ByteLevel or TemplateProcessing");
}

void read_decoder(const Reader& r, const json& root) {
  const json* component = r.optional_member(root, "decoder");
  if (component == nullptr) r.fail("decoder", "missing; expected a ByteLevel decoder");
  const std::string type = r.type_of(*component, "decoder");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const json& list = r.array(r.member(*component, "decoder", "decoders"), "decoder.decoders");
    if (list.size() == 1 && r.type_of(list[0], "decoder.decoders[0]") == "ByteLevel") return;
    r.fail("decoder.decoders", "unsupported sequence; expected exactly one ByteLevel");
  }
  r.fail("decoder.type", "unsupported decoder '" + type + "', expected 'ByteLevel'");
}

void refuse_present(const Reader& r, const json& root, const char* key, const char* why) {
  const json* v = r.optional_member(root, key);
  if (v == nullptr) return;
  if (std::string(key) == "normalizer" && v->is_object() && v->value("type", "") == "Sequence" &&
      v->contains("normalizers") && (*v)["normalizers"].is_array() && (*v)["normalizers"].empty()) {
    return;  // an empty normalizer sequence changes nothing
  }
  r.fail(key, why);
}

}  // namespace

TokenizerSpec parse_tokenizer_json(std::string_view json_text, const std::string& origin) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    // parse_error for bad syntax, out_of_range for a number too large for any type.
    throw TokenizerError(origin + ": not valid JSON: " + e.what());
  }
  const Reader r(origin);
  if (!root.is_object()) throw TokenizerError(origin + ": expected a JSON object at the top level");
  TokenizerSpec spec;
  try {
    refuse_present(r, root, "normalizer", "unsupported; byte-level BPE expects null");
    refuse_present(r, root, "truncation", "unsupported; expected null");
    refuse_present(r, root, "padding", "unsupported; expected null");
    read_model(r, r.member(root, "", "model"), spec.bpe);
    read_added_tokens(r, root, spec.added_tokens);
    read_pre_tokenizer(r, root, spec);
    if (const json* post = r.optional_member(root, "post_processor")) {
      read_post_processor(r, *post, "post_processor", spec);
    }
    read_decoder(r, root);
  } catch (const json::exception& e) {
    // Defensive: every access above is type-checked, but a library-level surprise must still
    // come out as one line naming the file.
    throw TokenizerError(origin + ": malformed tokenizer.json: " + e.what());
  }
  return spec;
}

}  // namespace moepage::tokenizer
