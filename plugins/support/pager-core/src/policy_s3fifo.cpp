// s3fifo: probation, main and ghost FIFO queues over one slot pool (see policy.hpp). The queues are
// kept as per-slot flags and entry times rather than linked lists: a pool holds at most a few
// hundred slots, so choosing a victim scans them, and nothing is allocated after construction.
#include <algorithm>

#include "moepage/pager_core/policy.hpp"

namespace moepage::pager {

namespace {
constexpr uint8_t kMaxFreq = 3;
}  // namespace

S3FifoPolicy::S3FifoPolicy(uint32_t n_slots, uint32_t n_experts)
    : small_target_(std::max<uint32_t>(1, n_slots / 10)),
      ghost_capacity_(n_slots),
      ghost_at_(n_experts, 0),
      small_(n_slots, 1),
      freq_(n_slots, 0),
      fresh_(n_slots, 0),
      queued_at_(n_slots, 0),
      slot_expert_(n_slots, 0) {}

bool S3FifoPolicy::in_ghost(uint32_t expert) const {
  const uint64_t at = ghost_at_[expert];
  return at != 0 && ghost_clock_ + 1 - at <= ghost_capacity_;
}

void S3FifoPolicy::on_insert(uint32_t slot, uint32_t expert, uint64_t now) {
  small_[slot] = in_ghost(expert) ? 0 : 1;  // a recent probation victim returns to main
  ghost_at_[expert] = 0;
  freq_[slot] = 0;
  fresh_[slot] = 1;  // a demand miss reports its own access next; that one is not a hit
  queued_at_[slot] = now;
  slot_expert_[slot] = expert;
}

void S3FifoPolicy::on_access(uint32_t slot, uint32_t, uint64_t) {
  if (fresh_[slot]) {
    fresh_[slot] = 0;
    return;
  }
  if (freq_[slot] < kMaxFreq) ++freq_[slot];
}

void S3FifoPolicy::on_evict(uint32_t slot, uint32_t expert) {
  if (small_[slot]) {
    ++ghost_clock_;
    ghost_at_[expert] = ghost_clock_;
  }
  freq_[slot] = 0;
  fresh_[slot] = 0;
}

int32_t S3FifoPolicy::choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                                    uint64_t now) {
  // Each pass either returns, moves a used probation slot to main, or spends one of a main slot's
  // hits, so 2 + (kMaxFreq + 1) x candidates passes always suffice.
  const size_t passes = 2 + (size_t(kMaxFreq) + 1) * candidates.size();
  for (size_t pass = 0; pass < passes; ++pass) {
    int32_t oldest_small = -1, oldest_main = -1;
    uint32_t small_count = 0;
    for (uint32_t slot : candidates) {
      if (small_[slot]) ++small_count;
      if (protected_slots[slot]) continue;
      int32_t& oldest = small_[slot] ? oldest_small : oldest_main;
      if (oldest < 0 || queued_at_[slot] < queued_at_[uint32_t(oldest)]) oldest = int32_t(slot);
    }
    const bool from_small = oldest_small >= 0 && (small_count >= small_target_ || oldest_main < 0);
    const int32_t pick = from_small ? oldest_small : oldest_main;
    if (pick < 0) return -1;  // every candidate is protected
    const uint32_t slot = uint32_t(pick);
    if (freq_[slot] == 0) return pick;
    if (from_small) {
      small_[slot] = 0;  // used while on probation: promote to main
      freq_[slot] = 0;
    } else {
      --freq_[slot];  // used in main: one more pass
    }
    queued_at_[slot] = now;
  }
  // Unreachable by the bound above; fall back to the oldest unprotected slot.
  int32_t victim = -1;
  for (uint32_t slot : candidates)
    if (!protected_slots[slot] && (victim < 0 || queued_at_[slot] < queued_at_[uint32_t(victim)]))
      victim = int32_t(slot);
  return victim;
}

}  // namespace moepage::pager
