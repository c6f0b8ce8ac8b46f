// A hand-made byte-level BPE tokenizer.json for the tests: two special tokens, the 256 byte
// characters, and a few merges whose ranks make the merge order observable.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode_classes.hpp"

namespace tiny {

inline std::string byte_char(unsigned char b) {
  std::string s;
  moepage::tokenizer::append_utf8(s, moepage::tokenizer::byte_to_char(b));
  return s;
}

// Merges in rank order. "h e" outranks "e r", so "her" becomes "he"+"r" and then "her".
inline const std::vector<std::pair<std::string, std::string>>& merges() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"h", "e"}, {"Ġ", "t"}, {"Ġt", "he"}, {"'", "s"}, {"1", "2"}, {"Ġ", "Ġ"}, {"e", "r"}, {"he", "r"},
  };
  return m;
}

inline nlohmann::json json(bool with_template = false) {
  nlohmann::json vocab = nlohmann::json::object();
  int id = 2;  // 0 and 1 are the special tokens
  for (int b = 0; b < 256; ++b) vocab[byte_char(static_cast<unsigned char>(b))] = id++;
  nlohmann::json merge_list = nlohmann::json::array();
  for (const auto& [l, r] : merges()) {
    vocab[l + r] = id++;
    merge_list.push_back(l + " " + r);
  }
  nlohmann::json j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens",
       {{{"id", 0},
         {"content", "<|bos|>"},
         {"single_word", false},
         {"lstrip", false},
         {"rstrip", false},
         {"normalized", false},
         {"special", true}},
        {{"id", 1},
         {"content", "<|eos|>"},
         {"single_word", false},
         {"lstrip", false},
         {"rstrip", false},
         {"normalized", false},
         {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor",
       {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", merge_list}}},
  };
  if (with_template) {
    j["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<|bos|>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", nlohmann::json::array()},
        {"special_tokens", {{"<|bos|>", {{"id", "<|bos|>"}, {"ids", {0}}, {"tokens", {"<|bos|>"}}}}}},
    };
  }
  return j;
}

inline moepage::tokenizer::Tokenizer make(bool with_template = false) {
  return moepage::tokenizer::Tokenizer::parse(json(with_template).dump(), "tiny/tokenizer.json");
}

}  // namespace tiny
