#include "moepage/pager_core/policy.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "units/enum_names.hpp"

namespace moepage::pager {

namespace {

constexpr units::EnumName<PolicyKind> kPolicyNames[] = {{PolicyKind::Lru, "lru"},
                                                        {PolicyKind::Lfu, "lfu"},
                                                        {PolicyKind::Lfru, "lfru"},
                                                        {PolicyKind::Belady, "belady"},
                                                        {PolicyKind::S3Fifo, "s3fifo"}};

// The unprotected candidate that no other beats: `beats(a, b)` says slot a is the better victim.
// Ties keep the earlier candidate. -1 when every candidate is protected.
template <class Beats>
int32_t pick_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots, Beats beats) {
  int32_t victim = -1;
  for (uint32_t slot : candidates) {
    if (protected_slots[slot]) continue;
    if (victim < 0 || beats(slot, uint32_t(victim))) victim = int32_t(slot);
  }
  return victim;
}

}  // namespace

std::optional<PolicyKind> policy_from_name(std::string_view name) { return units::value_named(kPolicyNames, name); }

std::string_view policy_name(PolicyKind kind) { return units::name_of(kPolicyNames, kind, "unknown"); }

std::unique_ptr<Policy> make_policy(const PolicySpec& spec, uint32_t n_slots, uint32_t n_experts) {
  switch (spec.kind) {
    case PolicyKind::Lru: return std::make_unique<LruPolicy>(n_slots);
    case PolicyKind::Lfu: return std::make_unique<LfuPolicy>(n_slots, n_experts);
    case PolicyKind::Lfru: {
      const double half_life = spec.half_life > 0.0 ? spec.half_life : 4.0 * double(n_slots);
      return std::make_unique<LfruPolicy>(n_slots, n_experts, half_life);
    }
    case PolicyKind::Belady: return std::make_unique<BeladyPolicy>(n_slots, n_experts);
    case PolicyKind::S3Fifo: return std::make_unique<S3FifoPolicy>(n_slots, n_experts);
  }
  throw std::invalid_argument("make_policy: unknown policy kind " + std::to_string(int(spec.kind)));
}

// ---- lru ----

LruPolicy::LruPolicy(uint32_t n_slots) : last_use_(n_slots, 0) {}

void LruPolicy::on_insert(uint32_t slot, uint32_t, uint64_t now) { last_use_[slot] = now; }
void LruPolicy::on_access(uint32_t slot, uint32_t, uint64_t now) { last_use_[slot] = now; }
void LruPolicy::on_evict(uint32_t slot, uint32_t) { last_use_[slot] = 0; }

int32_t LruPolicy::choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                                 uint64_t) {
  return pick_victim(candidates, protected_slots, [&](uint32_t a, uint32_t b) { return last_use_[a] < last_use_[b]; });
}

// ---- lfu ----

LfuPolicy::LfuPolicy(uint32_t n_slots, uint32_t n_experts)
    : count_(n_experts, 0), slot_expert_(n_slots, 0), last_use_(n_slots, 0) {}

void LfuPolicy::on_insert(uint32_t slot, uint32_t expert, uint64_t now) {
  slot_expert_[slot] = expert;
  last_use_[slot] = now;
}
void LfuPolicy::on_access(uint32_t slot, uint32_t expert, uint64_t now) {
  ++count_[expert];
  last_use_[slot] = now;
}
void LfuPolicy::on_evict(uint32_t slot, uint32_t) { last_use_[slot] = 0; }

int32_t LfuPolicy::choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                                 uint64_t) {
  return pick_victim(candidates, protected_slots, [&](uint32_t a, uint32_t b) {
    const uint64_t ca = count_[slot_expert_[a]], cb = count_[slot_expert_[b]];
    return ca < cb || (ca == cb && last_use_[a] < last_use_[b]);
  });
}

// ---- lfru (decayed lfu) ----

LfruPolicy::LfruPolicy(uint32_t n_slots, uint32_t n_experts, double half_life)
    : half_life_(half_life),
      score_(n_experts, 0.0),
      updated_(n_experts, 0),
      rank_(n_experts, -std::numeric_limits<double>::infinity()),
      slot_expert_(n_slots, 0),
      last_use_(n_slots, 0) {
  if (!(half_life > 0.0) || !std::isfinite(half_life))
    throw std::invalid_argument("lfru: half_life must be a positive number of pool events, got " +
                                std::to_string(half_life));
}

double LfruPolicy::value(uint32_t expert, uint64_t now) const {
  const double age = now >= updated_[expert] ? double(now - updated_[expert]) : 0.0;
  return score_[expert] * std::exp2(-age / half_life_);
}

void LfruPolicy::on_insert(uint32_t slot, uint32_t expert, uint64_t now) {
  slot_expert_[slot] = expert;
  last_use_[slot] = now;
}
void LfruPolicy::on_access(uint32_t slot, uint32_t expert, uint64_t now) {
  score_[expert] = value(expert, now) + 1.0;
  updated_[expert] = now;
  rank_[expert] = std::log2(score_[expert]) + double(now) / half_life_;
  last_use_[slot] = now;
}
void LfruPolicy::on_evict(uint32_t slot, uint32_t) { last_use_[slot] = 0; }

// Every score decays by the same factor over the same time, so the order of the values at any
// moment is the order of the ranks (log2 of the value times 2^(now / H), fixed between accesses):
// no exponential per candidate, and no value underflows to a tie however old.
int32_t LfruPolicy::choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                                  uint64_t) {
  int32_t victim = -1;
  double victim_value = 0.0;
  for (uint32_t slot : candidates) {
    if (protected_slots[slot]) continue;
    const double v = rank_[slot_expert_[slot]];
    if (victim < 0 || v < victim_value || (v == victim_value && last_use_[slot] < last_use_[uint32_t(victim)])) {
      victim = int32_t(slot);
      victim_value = v;
    }
  }
  return victim;
}

// ---- belady ----

BeladyPolicy::BeladyPolicy(uint32_t n_slots, uint32_t n_experts)
    : next_use_(n_experts, kNever), slot_expert_(n_slots, 0) {}

void BeladyPolicy::set_next_use(uint32_t expert, uint64_t next) { next_use_[expert] = next; }
void BeladyPolicy::on_insert(uint32_t slot, uint32_t expert, uint64_t) { slot_expert_[slot] = expert; }
void BeladyPolicy::on_access(uint32_t, uint32_t, uint64_t) {}
void BeladyPolicy::on_evict(uint32_t, uint32_t) {}

int32_t BeladyPolicy::choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                                    uint64_t) {
  return pick_victim(candidates, protected_slots,
                     [&](uint32_t a, uint32_t b) { return next_use_[slot_expert_[a]] > next_use_[slot_expert_[b]]; });
}

}  // namespace moepage::pager
