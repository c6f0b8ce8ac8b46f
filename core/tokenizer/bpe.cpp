#include "tokenizer/bpe.hpp"

#include <functional>
#include <mutex>
#include <queue>
#include <stdexcept>

#include "tokenizer/unicode_classes.hpp"

namespace moepage::tokenizer {
namespace {

// Ids index a dense table; a bound keeps a corrupt file from asking for gigabytes.
constexpr int32_t kMaxTokenId = 1 << 21;  // real vocabularies stay below 300k
constexpr std::size_t kCacheCapacity = 1 << 16;
constexpr std::size_t kMaxCachedWordBytes = 256;

uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }

}  // namespace

struct BpeModel::Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>> words;
};

BpeModel::BpeModel(const BpeSpec& spec) : cache_(std::make_unique<Cache>()) {
  int32_t max_id = -1;
  for (const auto& [token, id] : spec.vocab) {
    if (id < 0 || id >= kMaxTokenId) {
      throw std::invalid_argument("vocab entry '" + token + "' has id " + std::to_string(id) + ", expected 0.." +
                                  std::to_string(kMaxTokenId - 1));
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
      throw std::invalid_argument("vocab id " + std::to_string(id) + " is used by '" + id_to_token_[std::size_t(id)] +
                                  "' and '" + token + "'");
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
      throw std::invalid_argument("merge " + std::to_string(rank) + " ('" + left + "' '" + right + "') uses '" +
                                  missing + "', which is not in the vocab");
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
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // neighbours still alive, -1 at the ends
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (std::size_t pos = 0; pos < word.size();) {
    const uint32_t length = decode_utf8(word, pos).length;
    std::optional<int32_t> id = token_to_id(word.substr(pos, length));
    // Without an unk token an unknown character is dropped, as the reference does; consecutive
    // unknown characters are not fused (byte-level vocabularies never need it).
    if (!id) id = unk_id_;
    if (id) {
      const auto index = static_cast<int32_t>(symbols.size());
      symbols.push_back({*id, index - 1, -1});
      if (index > 0) symbols[std::size_t(index) - 1].next = index;
    }
    pos += length;
  }
  // Candidate merges, best rank first and leftmost among equal ranks. A candidate whose left or
  // right symbol has changed since it was queued is stale and skipped. A merge's result can only
  // take part in later-ranked merges, so this equals applying the merges in rank order; the
  // queue keeps long words at O(n log n) instead of rescanning them after every merge.
  struct Candidate {
    uint32_t rank;
    int32_t left;
    int32_t left_id, right_id, result;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[std::size_t(left)].next;
    if (right < 0) return;
    const int32_t l = symbols[std::size_t(left)].id, r = symbols[std::size_t(right)].id;
    const auto it = merges_.find(pair_key(l, r));
    if (it != merges_.end()) queue.push({it->second.rank, left, l, r, it->second.result});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);
  std::vector<bool> dead(symbols.size(), false);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[std::size_t(c.left)];
    if (dead[std::size_t(c.left)] || left.id != c.left_id || left.next < 0) continue;
    const int32_t right_index = left.next;
    Symbol& right = symbols[std::size_t(right_index)];
    if (right.id != c.right_id) continue;
    left.id = c.result;
    dead[std::size_t(right_index)] = true;
    left.next = right.next;
    if (right.next >= 0) symbols[std::size_t(right.next)].prev = c.left;
    consider(left.prev);
    consider(c.left);
  }
  std::vector<int32_t> ids;
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    if (!dead[i]) ids.push_back(symbols[i].id);
  }
  return ids;
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
  if (word.size() > kMaxCachedWordBytes) return;  // rare, and would crowd out the common words
  std::lock_guard lock(cache_->mutex);
  if (cache_->words.size() >= kCacheCapacity) cache_->words.clear();
  cache_->words.emplace(key, std::move(ids));
}

}  // namespace moepage::tokenizer
