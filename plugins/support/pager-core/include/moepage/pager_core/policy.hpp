// Eviction policies: the one interface shared by the live pagers (through SlotPool) and by
// `moepage simulate`, so a policy measured in simulation runs unchanged behind a profile key.
//
// A policy sees one slot pool. Time is the pool's own logical clock: it advances by one for every
// event the pool reports (a demand access, an insertion), so the same trace gives the same times
// in a live run and in the simulator. Policies size all their state at construction; none of the
// calls below allocates.
//
// Policies:
//   lru    evict the slot whose last demand use (or insertion) is oldest.
//   lfu    evict the slot whose expert has the fewest demand accesses over the whole run (counts
//          survive eviction: a hot expert that was pushed out comes back hot); ties -> lru.
//   lfru   decayed LFU, frequency with recency. Each expert e keeps a score s_e and the time t_e of
//          its last update. On a demand access at time t:
//              s_e <- s_e * 2^(-(t - t_e) / H) + 1,   t_e <- t
//          The victim is the candidate with the smallest current value s_e * 2^(-(now - t_e) / H);
//          ties (including values that underflowed to 0) -> lru. H is the half-life in pool
//          events: H -> infinity is lfu, H -> 0 is lru. Default H = 4 x slots (see PolicySpec):
//          on synthetic Zipf traces with drifting hot sets (64 experts, top-6, 8/16/32 slots),
//          H = 2-4 x slots beat both lru and lfu at every size; retune on recorded routing.
//   belady evict the expert whose next request lies furthest in the future (never again =
//          infinitely far); needs the future, so only the simulator can use it: it calls
//          BeladyPolicy::set_next_use before each request. Ties -> lowest slot.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace moepage::pager {

enum class PolicyKind : uint8_t { Lru, Lfu, Lfru, Belady };

// "lru", "lfu", "lfru", "belady"; nullopt for anything else.
std::optional<PolicyKind> policy_from_name(std::string_view name);
std::string_view policy_name(PolicyKind kind);

struct PolicySpec {
  PolicyKind kind = PolicyKind::Lru;
  // lfru only: half-life in pool events; 0 picks the default, 4 x slots.
  double half_life = 0.0;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual PolicyKind kind() const = 0;
  // `slot` now holds `expert` (a demand miss or a prefetch). Forget whatever the slot held.
  virtual void on_insert(uint32_t slot, uint32_t expert, uint64_t now) = 0;
  // A demand use of the expert in `slot` (a hit, or the miss that just inserted it).
  virtual void on_access(uint32_t slot, uint32_t expert, uint64_t now) = 0;
  // The slot was emptied (evicted or its fill failed).
  virtual void on_evict(uint32_t slot, uint32_t expert) = 0;
  // The victim among `candidates` (slots holding valid experts), skipping every slot s with
  // protected_slots[s] != 0. Returns -1 when every candidate is protected.
  virtual int32_t choose_victim(std::span<const uint32_t> candidates,
                                std::span<const uint8_t> protected_slots, uint64_t now) = 0;
};

// Builds a policy for a pool of n_slots slots over n_experts experts.
std::unique_ptr<Policy> make_policy(const PolicySpec& spec, uint32_t n_slots, uint32_t n_experts);

class LruPolicy final : public Policy {
 public:
  explicit LruPolicy(uint32_t n_slots);
  PolicyKind kind() const override { return PolicyKind::Lru; }
  void on_insert(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_access(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_evict(uint32_t slot, uint32_t expert) override;
  int32_t choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                        uint64_t now) override;

 private:
  std::vector<uint64_t> last_use_;  // [slot]
};

class LfuPolicy final : public Policy {
 public:
  LfuPolicy(uint32_t n_slots, uint32_t n_experts);
  PolicyKind kind() const override { return PolicyKind::Lfu; }
  void on_insert(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_access(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_evict(uint32_t slot, uint32_t expert) override;
  int32_t choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                        uint64_t now) override;

 private:
  std::vector<uint64_t> count_;        // [expert] demand accesses over the run
  std::vector<uint32_t> slot_expert_;  // [slot]
  std::vector<uint64_t> last_use_;     // [slot]
};

class LfruPolicy final : public Policy {
 public:
  LfruPolicy(uint32_t n_slots, uint32_t n_experts, double half_life);
  PolicyKind kind() const override { return PolicyKind::Lfru; }
  double half_life() const { return half_life_; }
  void on_insert(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_access(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_evict(uint32_t slot, uint32_t expert) override;
  int32_t choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                        uint64_t now) override;
  // The decayed score of `expert` at time `now` (for tests and diagnostics).
  double value(uint32_t expert, uint64_t now) const;

 private:
  double half_life_;
  std::vector<double> score_;          // [expert]
  std::vector<uint64_t> updated_;      // [expert] time of the last score update
  std::vector<uint32_t> slot_expert_;  // [slot]
  std::vector<uint64_t> last_use_;     // [slot]
};

class BeladyPolicy final : public Policy {
 public:
  static constexpr uint64_t kNever = UINT64_MAX;
  BeladyPolicy(uint32_t n_slots, uint32_t n_experts);
  PolicyKind kind() const override { return PolicyKind::Belady; }
  // The index of the next request (in any monotonic unit) that uses `expert`, kNever if none.
  void set_next_use(uint32_t expert, uint64_t next);
  void on_insert(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_access(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_evict(uint32_t slot, uint32_t expert) override;
  int32_t choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                        uint64_t now) override;

 private:
  std::vector<uint64_t> next_use_;     // [expert]
  std::vector<uint32_t> slot_expert_;  // [slot]
};

}  // namespace moepage::pager
