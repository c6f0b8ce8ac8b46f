#include "tokenizer/bpe.hpp"

#include <limits>
#include <mutex>
#include <stdexcept>

#include "tokenizer/unicode_classes.hpp"

namespace moepage::tokenizer {
namespace {

// Ids index a dense table; a bound keeps a corrupt file from asking for gigabytes.
constexpr int32_t kMaxTokenId = 1 << 21;  // real vocabularies stay below 300k
constexpr std::size_t kCacheCapacity = 1 << 16;

uint64_t pair_key(int32_t left, int32_t right) {
  return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

}  // namespace

struct BpeModel::Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>> words;
};

BpeModel::BpeModel(const BpeSpec& spec) : cache_(std::make_unique<Cache>()) {
  int32_t max_id = -1;
  for (const auto& [token, id] : spec.vocab) {
    if (id < 0 || id >= kMaxTokenId) {
      throw std::invalid_argument("vocab entry '" + token + "' has id " + std::to_string(id) +
                                  ", expected 0.." + std::to_string(kMaxTokenId - 1));
    }
    if (!token_to_id_.emplace(token, id).second) {
      throw std::invalid_argument("vocab token '" + token + "' appears twice");
    }
    max_id = std::max(max_id, id);
  }
  id_to_token_.resize(std::size_t(max_id + 1));
  id_used_.assign(std::size_t(max_id + 1), false);
  for (const auto& [token, id] : spec.vocab) {
    if (id_used_[std::size_t(id)]) {
      throw std::invalid_argument("vocab id " + std::to_string(id) + " is used by '" +
                                  id_to_token_[std::size_t(id)] + "' and '" + token + "'");
    }
    id_used_[std::size_t(id)] = true;
    id_to_token_[std::size_t(id)] = token;
  }
  merges_.reserve(spec.merges.size());
  for (std::size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [left, right] = spec.merges[rank];
    const auto l = token_to_id(left), r = token_to_id(right), m = token_to_id(left + right);
    if (!l || !r || !m) {
      const std::string missing = !l ? left : !r ? right : left + right;
      throw std::invalid_argument("merge " + std::to_string(rank) + " ('" + left + "' '" + right +
                                  "') uses '" + missing + "', which is not in the vocab");
    }
    // A repeated pair takes its last rank: the reference builds its merge map the same way.
    merges_.insert_or_assign(pair_key(*l, *r), Merge{uint32_t(rank), *m});
  }
  if (spec.unk_token) {
    unk_id_ = token_to_id(*spec.unk_token);
    if (!unk_id_) throw std::invalid_argument("unk_token '" + *spec.unk_token + "' is not in the vocab");
  }
  ignore_merges_ = spec.ignore_merges;
}

BpeModel::~BpeModel() = default;
BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = token_to_id_.find(std::string(token));
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || std::size_t(id) >= id_to_token_.size() || !id_used_[std::size_t(id)]) return nullptr;
  return &id_to_token_[std::size_t(id)];
}

std::vector<int32_t> BpeModel::merge_word(std::string_view word) const {
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  for (std::size_t pos = 0; pos < word.size();) {
    const uint32_t length = decode_utf8(word, pos).length;
    if (const auto id = token_to_id(word.substr(pos, length))) {
      symbols.push_back(*id);
    } else if (unk_id_) {
      // Consecutive unknown characters are not fused: byte-level vocabularies never need it.
      symbols.push_back(*unk_id_);
    }
    // Without an unk token an unknown character is dropped, as the reference does.
    pos += length;
  }
  // Repeatedly apply the best-ranked merge, leftmost first. A merge's result can only take
  // part in later-ranked merges, so this equals applying merges in rank order.
  while (symbols.size() > 1) {
    uint32_t best_rank = std::numeric_limits<uint32_t>::max();
    std::size_t best_pos = 0;
    int32_t best_result = -1;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = merges_.find(pair_key(symbols[i], symbols[i + 1]));
      if (it != merges_.end() && it->second.rank < best_rank) {
        best_rank = it->second.rank;
        best_pos = i;
        best_result = it->second.result;
      }
    }
    if (best_result < 0) break;
    symbols[best_pos] = best_result;
    symbols.erase(symbols.begin() + std::ptrdiff_t(best_pos) + 1);
  }
  return symbols;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    if (const auto id = token_to_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  const std::string key(word);
  {
    std::lock_guard lock(cache_->mutex);
    const auto it = cache_->words.find(key);
    if (it != cache_->words.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids = merge_word(word);
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard lock(cache_->mutex);
  if (cache_->words.size() >= kCacheCapacity) cache_->words.clear();
  cache_->words.emplace(key, std::move(ids));
}

}  // namespace moepage::tokenizer
