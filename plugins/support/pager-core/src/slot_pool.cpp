#include "moepage/pager_core/slot_pool.hpp"

#include <string>

#include "moepage/pager_core/errors.hpp"

namespace moepage::pager {

SlotPool::SlotPool(uint32_t layer, uint32_t part, uint32_t n_parts, uint32_t n_slots, uint32_t n_experts,
                   const PolicySpec& policy)
    : layer_(layer),
      part_(part),
      n_parts_(n_parts),
      slot_of_(n_experts, -1),
      expert_of_(n_slots, -1),
      state_(n_slots, SlotState::Empty),
      fill_of_(n_slots, 0),
      prefetched_(n_slots, 0),
      token_protected_(n_slots, 0),
      request_mask_(n_slots, 0),
      seen_(n_experts, 0),
      policy_(make_policy(policy, n_slots, n_experts)) {
  if (n_slots == 0) throw PagerError(ErrorKind::InvalidRequest, where() + ": a slot pool needs at least one slot");
  candidates_.reserve(n_slots);
}

std::string SlotPool::where() const {
  std::string s = "layer " + std::to_string(layer_);
  if (n_parts_ == 2) s += part_ == 0 ? " (gate_up pool)" : " (down pool)";
  else if (n_parts_ > 2) s += " (pool " + std::to_string(part_) + ")";
  return s;
}

void SlotPool::check_demand(std::span<const int32_t> experts) const {
  if (experts.size() > n_slots())
    throw PagerError(ErrorKind::InvalidRequest, where() + ": request of " + std::to_string(experts.size()) +
                                                    " experts exceeds the " + std::to_string(n_slots()) +
                                                    " slots of its pool");
  const uint64_t stamp = ++seen_stamp_;
  uint32_t misses = 0;
  for (int32_t e : experts) {
    if (e < 0 || uint32_t(e) >= n_experts())
      throw PagerError(ErrorKind::InvalidRequest, where() + ": expert " + std::to_string(e) +
                                                      " is out of range (the layer has " + std::to_string(n_experts()) +
                                                      " experts)");
    if (seen_[uint32_t(e)] == stamp)
      throw PagerError(ErrorKind::InvalidRequest,
                       where() + ": expert " + std::to_string(e) + " is requested twice in one request");
    seen_[uint32_t(e)] = stamp;
    if (slot_of_[uint32_t(e)] < 0) ++misses;
  }
  if (misses == 0) return;
  // Slots a miss may take: empty ones, and valid ones the request does not name.
  uint32_t evictable = 0, filling = 0;
  for (uint32_t s = 0; s < n_slots(); ++s) {
    if (state_[s] == SlotState::Filling) ++filling;
    else if (state_[s] == SlotState::Empty || seen_[uint32_t(expert_of_[s])] != stamp) ++evictable;
  }
  if (evictable < misses)
    throw PagerError(ErrorKind::SlotsBusy, where() + ": " + std::to_string(misses) + " misses need slots but only " +
                                               std::to_string(evictable) + " can be evicted (" +
                                               std::to_string(filling) +
                                               " slots are still being filled); wait for those fills and retry");
}

int32_t SlotPool::take_slot(std::span<const uint8_t> mask, SlotPlan& out) {
  out.evicted = -1;
  for (uint32_t s = 0; s < n_slots(); ++s)
    if (state_[s] == SlotState::Empty) return int32_t(s);
  candidates_.clear();  // capacity was reserved at construction: no allocation
  for (uint32_t s = 0; s < n_slots(); ++s)
    if (state_[s] == SlotState::Valid) candidates_.push_back(s);
  const int32_t victim = policy_->choose_victim(candidates_, mask, clock_);
  if (victim < 0) return -1;
  const uint32_t v = uint32_t(victim);
  const int32_t old = expert_of_[v];
  out.evicted = old;
  if (prefetched_[v]) {
    ++counters_.prefetch_wasted;
    prefetched_[v] = 0;
  }
  slot_of_[uint32_t(old)] = -1;
  expert_of_[v] = -1;
  state_[v] = SlotState::Empty;
  policy_->on_evict(v, uint32_t(old));
  ++generation_;
  return victim;
}

void SlotPool::insert(uint32_t slot, uint32_t expert, uint64_t fill) {
  slot_of_[expert] = int32_t(slot);
  expert_of_[slot] = int32_t(expert);
  state_[slot] = SlotState::Filling;
  fill_of_[slot] = fill;
  prefetched_[slot] = 0;
  ++generation_;
}

uint32_t SlotPool::demand(std::span<const int32_t> experts, uint64_t fill, std::span<SlotPlan> out) {
  // Pass 1: hits, in request order.
  for (size_t i = 0; i < experts.size(); ++i) {
    const uint32_t e = uint32_t(experts[i]);
    SlotPlan& p = out[i];
    p = SlotPlan{};
    const int32_t s = slot_of_[e];
    if (s < 0) continue;
    const uint32_t slot = uint32_t(s);
    p.slot = slot;
    p.hit = true;
    p.pending = state_[slot] == SlotState::Filling;
    p.fill = p.pending ? fill_of_[slot] : 0;
    policy_->on_access(slot, e, ++clock_);
    request_mask_[slot] = 1;
    token_protected_[slot] = 1;
    if (prefetched_[slot]) {
      ++counters_.prefetch_used;
      prefetched_[slot] = 0;
      p.prefetched = true;
    }
    ++counters_.hits;
  }
  // Pass 2: misses, in request order. A slot taken by an earlier miss is Filling, so it is never
  // a candidate; hits are masked.
  uint32_t misses = 0;
  for (size_t i = 0; i < experts.size(); ++i) {
    const uint32_t e = uint32_t(experts[i]);
    SlotPlan& p = out[i];
    if (p.hit) continue;
    const int32_t s = take_slot(request_mask_, p);
    // check_demand guaranteed a slot; reaching here without one is a bookkeeping bug.
    if (s < 0) throw PagerError(ErrorKind::InvalidRequest, where() + ": internal error: no slot for a checked miss");
    const uint32_t slot = uint32_t(s);
    insert(slot, e, fill);
    p.slot = slot;
    p.pending = true;
    p.fill = fill;
    const uint64_t now = ++clock_;
    policy_->on_insert(slot, e, now);
    policy_->on_access(slot, e, now);
    request_mask_[slot] = 1;
    token_protected_[slot] = 1;
    ++counters_.misses;
    ++misses;
  }
  counters_.accesses += experts.size();
  for (size_t i = 0; i < experts.size(); ++i) request_mask_[out[i].slot] = 0;
  return misses;
}

bool SlotPool::can_prefetch() const {
  for (uint32_t s = 0; s < n_slots(); ++s) {
    if (state_[s] == SlotState::Empty) return true;
    if (state_[s] == SlotState::Valid && !token_protected_[s]) return true;
  }
  return false;
}

bool SlotPool::prefetch(uint32_t expert, uint64_t fill, SlotPlan& out) {
  out = SlotPlan{};
  const int32_t s = take_slot(token_protected_, out);
  if (s < 0) return false;
  const uint32_t slot = uint32_t(s);
  insert(slot, expert, fill);
  prefetched_[slot] = 1;
  policy_->on_insert(slot, expert, ++clock_);
  out.slot = slot;
  out.pending = true;
  out.fill = fill;
  ++counters_.prefetch_issued;
  return true;
}

uint32_t SlotPool::commit_fill(uint64_t fill) {
  uint32_t n = 0;
  for (uint32_t s = 0; s < n_slots(); ++s) {
    if (state_[s] == SlotState::Filling && fill_of_[s] == fill) {
      state_[s] = SlotState::Valid;
      fill_of_[s] = 0;
      ++n;
    }
  }
  return n;
}

void SlotPool::empty_failed(uint32_t s) {
  const int32_t e = expert_of_[s];
  slot_of_[uint32_t(e)] = -1;
  expert_of_[s] = -1;
  state_[s] = SlotState::Empty;
  fill_of_[s] = 0;
  if (prefetched_[s]) {
    ++counters_.prefetch_failed;
    prefetched_[s] = 0;
  }
  policy_->on_evict(s, uint32_t(e));
  ++counters_.fills_failed;
  ++generation_;
}

uint32_t SlotPool::invalidate_fill(uint64_t fill) {
  uint32_t n = 0;
  for (uint32_t s = 0; s < n_slots(); ++s) {
    if (state_[s] != SlotState::Filling || fill_of_[s] != fill) continue;
    empty_failed(s);
    ++n;
  }
  return n;
}

uint32_t SlotPool::drop(uint32_t expert) {
  if (expert >= slot_of_.size() || slot_of_[expert] < 0) return 0;
  const uint32_t s = uint32_t(slot_of_[expert]);
  if (state_[s] != SlotState::Valid) return 0;
  empty_failed(s);
  return 1;
}

void SlotPool::begin_token() {
  for (auto& p : token_protected_) p = 0;
}

}  // namespace moepage::pager
