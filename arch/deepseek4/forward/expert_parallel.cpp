#include "deepseek4/forward/expert_parallel.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace moepage::ds4 {

ExpertOwnership ExpertOwnership::round_robin(uint32_t n_layers, uint32_t n_experts, uint32_t ranks) {
  if (ranks == 0) throw std::invalid_argument("expert ownership: 0 ranks");
  std::vector<uint32_t> owner(size_t(n_layers) * n_experts);
  for (size_t i = 0; i < owner.size(); ++i) owner[i] = uint32_t(i % n_experts) % ranks;
  return ExpertOwnership(n_layers, n_experts, ranks, std::move(owner));
}

ExpertOwnership::ExpertOwnership(uint32_t n_layers, uint32_t n_experts, uint32_t ranks, std::vector<uint32_t> owner)
    : n_layers_(n_layers), n_experts_(n_experts), ranks_(ranks), owner_(std::move(owner)) {
  if (ranks_ == 0) throw std::invalid_argument("expert ownership: 0 ranks");
  if (owner_.size() != size_t(n_layers_) * n_experts_)
    throw std::invalid_argument("expert ownership: " + std::to_string(owner_.size()) + " entries for " +
                                std::to_string(n_layers_) + " layers of " + std::to_string(n_experts_) + " experts");
  for (size_t i = 0; i < owner_.size(); ++i)
    if (owner_[i] >= ranks_)
      throw std::invalid_argument("expert ownership: layer " + std::to_string(i / n_experts_) + " expert " +
                                  std::to_string(i % n_experts_) + " belongs to rank " + std::to_string(owner_[i]) +
                                  ", expected below " + std::to_string(ranks_));
}

uint32_t ExpertOwnership::owned(uint32_t layer, uint32_t rank) const {
  const auto first = owner_.begin() + ptrdiff_t(size_t(layer) * n_experts_);
  return uint32_t(std::count(first, first + n_experts_, rank));
}

class LocalRanks::Rank final : public Collective {
 public:
  Rank(LocalRanks& all, uint32_t r) : all_(all), r_(r) {}
  uint32_t rank() const override { return r_; }
  uint32_t size() const override { return all_.ranks_; }
  void all_reduce_sum(float* data, uint64_t n) override { all_.reduce(r_, data, n); }
  void abort(const std::string& why) override { all_.abort("rank " + std::to_string(r_) + " failed: " + why); }

 private:
  LocalRanks& all_;
  uint32_t r_;
};

LocalRanks::LocalRanks(uint32_t ranks, uint64_t max_floats)
    : ranks_(ranks), max_floats_(max_floats), published_(ranks, nullptr), sums_(ranks) {
  if (ranks == 0) throw std::invalid_argument("local ranks: 0 ranks");
  for (uint32_t r = 0; r < ranks; ++r) {
    views_.push_back(std::make_unique<Rank>(*this, r));
    sums_[r].resize(size_t(max_floats));
  }
}

LocalRanks::~LocalRanks() = default;

Collective& LocalRanks::rank(uint32_t r) {
  if (r >= ranks_)
    throw std::out_of_range("local ranks: rank " + std::to_string(r) + " of " + std::to_string(ranks_));
  return *views_[r];
}

void LocalRanks::barrier() {
  std::unique_lock<std::mutex> lock(mu_);
  if (aborted_) throw std::runtime_error(why_);
  const uint64_t gen = generation_;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
  if (generation_ == gen) throw std::runtime_error(why_);  // woken by an abort, not by the last rank
}

// Publish, wait for all, sum every rank's buffer in rank order into this rank's own sum, wait
// until no rank still reads a published buffer, then copy the sum back.
void LocalRanks::reduce(uint32_t r, float* data, uint64_t n) {
  if (n > max_floats_)
    throw std::invalid_argument("local ranks: all-reduce of " + std::to_string(n) + " floats, sized for " +
                                std::to_string(max_floats_));
  published_[r] = data;
  barrier();
  float* sum = sums_[r].data();
  std::copy(published_[0], published_[0] + n, sum);
  for (uint32_t q = 1; q < ranks_; ++q)
    for (uint64_t i = 0; i < n; ++i) sum[i] += published_[q][i];
  barrier();
  std::copy(sum, sum + n, data);
}

void LocalRanks::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_) why_ = why;
  aborted_ = true;
  cv_.notify_all();
}

}  // namespace moepage::ds4
