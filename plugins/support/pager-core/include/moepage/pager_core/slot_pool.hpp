// One pool of expert slots for one layer (or one part of a layer's experts: gate_up or down).
// Pure bookkeeping: which expert sits in which slot, each slot's state, the fills in flight and the
// eviction policy. Everything is sized at construction; no call allocates afterwards.
//
// The order of one demand request (SlotPool::demand), shared by the live pager and the simulator:
//   1. every requested expert already mapped (valid, or still filling) is a hit; hits are
//      accessed in request order (policy.on_access, one clock tick each);
//   2. then every miss, in request order, takes a slot: the lowest empty slot, else the policy's
//      victim among valid slots that this request did not name (so a request never evicts its own
//      experts); the slot is mapped to the expert in state Filling, and the policy sees
//      on_insert + on_access at one clock tick.
// Slots in state Filling are never victims (a read is writing into them).
// A prefetch (SlotPool::prefetch) inserts without an access and may not evict any slot the current
// token already requested (the token-protection mask, cleared by begin_token).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "moepage/pager_core/policy.hpp"

namespace moepage::pager {

enum class SlotState : uint8_t { Empty, Filling, Valid };

// One expert in one pool, as planned.
struct SlotPlan {
  uint32_t slot = 0;
  int32_t evicted = -1;     // the expert that held the slot before this plan, -1 if none
  uint64_t fill = 0;        // the fill to wait for when pending (this plan's on a miss), else 0
  bool hit = false;         // already mapped before this plan
  bool pending = false;     // the slot's bytes are not there yet: wait for `fill`
  bool prefetched = false;  // a hit on a slot a prefetch filled (its first use: prefetch used)
};

struct PoolCounters {
  uint64_t accesses = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t prefetch_issued = 0;  // experts inserted by a prefetch
  uint64_t prefetch_used = 0;    // prefetched, then requested before eviction (counted once)
  uint64_t prefetch_wasted = 0;  // prefetched, then evicted without a request
  uint64_t prefetch_failed = 0;  // prefetched, but the read failed
  uint64_t fills_failed = 0;     // slots emptied by invalidate_fill
};

class SlotPool {
 public:
  // layer and part only name the pool in error messages ("layer 3 (down pool)").
  SlotPool(uint32_t layer, uint32_t part, uint32_t n_parts, uint32_t n_slots, uint32_t n_experts,
           const PolicySpec& policy);

  uint32_t n_slots() const { return uint32_t(expert_of_.size()); }
  uint32_t n_experts() const { return uint32_t(slot_of_.size()); }
  int32_t slot_of(uint32_t expert) const { return slot_of_[expert]; }
  int32_t expert_of(uint32_t slot) const { return expert_of_[slot]; }
  SlotState state(uint32_t slot) const { return state_[slot]; }
  bool prefetched_unused(uint32_t slot) const { return prefetched_[slot] != 0; }
  bool token_protected(uint32_t slot) const { return token_protected_[slot] != 0; }
  // Bumped by every change of the expert -> slot mapping.
  uint64_t generation() const { return generation_; }
  const PoolCounters& counters() const { return counters_; }
  Policy& policy() { return *policy_; }

  // Throws PagerError unless demand() can serve experts[0..n): each in range and distinct, n
  // within the slot count, and enough evictable slots for the misses (SlotsBusy when fills in
  // flight are what is short). Changes nothing.
  void check_demand(std::span<const int32_t> experts) const;
  // Serves a request that check_demand accepted; writes one SlotPlan per expert into out.
  // Returns the number of misses. New fills carry `fill`.
  uint32_t demand(std::span<const int32_t> experts, uint64_t fill, std::span<SlotPlan> out);

  // Whether a prefetch could place one more expert now (an empty slot, or a valid slot neither
  // protected for this token nor filling).
  bool can_prefetch() const;
  // Inserts `expert` (in range, not mapped) as a prefetch; false if no slot can be had.
  bool prefetch(uint32_t expert, uint64_t fill, SlotPlan& out);

  // The read for `fill` completed: its slots become valid. Returns how many.
  uint32_t commit_fill(uint64_t fill);
  // The read for `fill` failed or was short: every slot it was filling becomes empty and unmapped,
  // so the next request reads again. Returns how many.
  uint32_t invalidate_fill(uint64_t fill);
  // A valid expert's bytes proved bad after its fill was committed (a pager that commits a
  // prefetch before its read lands, and then sees the read fail): its slot becomes empty and
  // unmapped, counted as a failed fill. Returns 1, or 0 when the expert is not valid here.
  uint32_t drop(uint32_t expert);
  // A new token starts: nothing is protected from prefetch any more.
  void begin_token();

 private:
  std::string where() const;  // "layer 3" or "layer 3 (down pool)", for errors only
  // The slot a new expert goes into, evicting if needed; -1 if none. mask: slots not to evict.
  int32_t take_slot(std::span<const uint8_t> mask, SlotPlan& out);
  void insert(uint32_t slot, uint32_t expert, uint64_t fill);
  // Slot s (mapped) becomes empty after a failed read: unmapped, the policy told, counted.
  void empty_failed(uint32_t s);

  uint32_t layer_, part_, n_parts_;
  std::vector<int32_t> slot_of_;          // [expert] slot or -1
  std::vector<int32_t> expert_of_;        // [slot] expert or -1
  std::vector<SlotState> state_;          // [slot]
  std::vector<uint64_t> fill_of_;         // [slot] fill tag while Filling
  std::vector<uint8_t> prefetched_;       // [slot] filled by a prefetch and not requested since
  std::vector<uint8_t> token_protected_;  // [slot] requested by the current token
  std::vector<uint8_t> request_mask_;     // [slot] named by the request being served
  std::vector<uint32_t> candidates_;      // scratch: valid slots
  mutable std::vector<uint64_t> seen_;    // [expert] stamp for duplicate detection
  mutable uint64_t seen_stamp_ = 0;
  std::unique_ptr<Policy> policy_;
  uint64_t clock_ = 0;
  uint64_t generation_ = 0;
  PoolCounters counters_;
};

}  // namespace moepage::pager
