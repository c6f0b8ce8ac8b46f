// The BPE model of a byte-level tokenizer: vocabulary, merges ranked by their order in the
// file, and a cache of already-encoded words (text repeats words constantly).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace moepage::tokenizer {

struct BpeSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;  // rank = index
  std::optional<std::string> unk_token;
  bool ignore_merges = false;  // a word that is itself a vocabulary entry is taken whole
};

class BpeModel {
 public:
  // Throws std::invalid_argument naming the offending entry (duplicate token or id, merge of
  // tokens that are not in the vocabulary, merge result missing, unknown unk_token).
  explicit BpeModel(const BpeSpec& spec);
  ~BpeModel();
  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;

  // Appends the ids of one pre-tokenized word (already in mapped-byte characters).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(int32_t id) const;  // nullptr for an unused id
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  struct Merge {
    uint32_t rank;
    int32_t result;
  };
  struct Cache;

  std::vector<int32_t> merge_word(std::string_view word) const;

  std::unordered_map<std::string, int32_t> token_to_id_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> id_used_;
  std::unordered_map<uint64_t, Merge> merges_;  // key: (left id << 32) | right id
  std::optional<int32_t> unk_id_;
  bool ignore_merges_ = false;
  std::unique_ptr<Cache> cache_;
};

}  // namespace moepage::tokenizer
