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
//          The victim is the candidate with the smallest current value s_e * 2^(-(now - t_e) / H),
//          compared through log2(s_e) + t_e / H, which orders the values alike at every moment
//          (an expert never used since insertion ranks lowest); ties -> lru. H is the half-life in pool
//          events: H -> infinity is lfu, H -> 0 is lru. Default H = 4 x slots (see PolicySpec):
//          on synthetic Zipf traces with drifting hot sets (64 experts, top-6, 8/16/32 slots),
//          H = 2-4 x slots beat both lru and lfu at every size; retune on recorded routing.
//   s3fifo three FIFO queues over the pool: a small probation queue (about a tenth of the slots)
//          that new experts enter, a main queue, and a ghost list of experts recently evicted from
//          probation. Each slot counts its hits (0..3). Evicting takes the probation queue's
//          oldest when probation holds at least its share: one used since it entered moves to main
//          instead; otherwise main's oldest goes, unless it was used, which buys it another pass
//          (its count drops by one). An expert found in the ghost list enters main directly.
//          One-off experts (a token's rare choice) thus leave quickly without pushing the
//          layer's hot experts out. (Yang et al., SOSP 2023.)
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

enum class PolicyKind : uint8_t { Lru, Lfu, Lfru, Belady, S3Fifo };

// What a per-layer slot split (split.hpp) minimises: the experts read into slots (misses plus the
// prefetches of hints and predictions: the bytes that cross the link), or the misses alone (what
// a token waits for when every prefetch lands in time).
enum class SplitObjective : uint8_t { Reads, Misses };

// "lru", "lfu", "lfru", "belady", "s3fifo"; nullopt for anything else.
std::optional<PolicyKind> policy_from_name(std::string_view name);
std::string_view policy_name(PolicyKind kind);

struct PolicySpec {
  PolicyKind kind = PolicyKind::Lru;
  // lfru only: half-life in pool events; 0 picks the default, 4 x slots.
  double half_life = 0.0;
  // Simulator only: also prefetch what a predictor proposed (a trace's predict rows), as the live
  // adapter-prefetch pager does; at most predict_m experts per proposal (0: all recorded).
  bool prefetch_predictions = false;
  uint32_t predict_m = 0;
  // Simulator only: split the same total slots per layer by the trace's own reuse (split.hpp)
  // instead of giving every layer the same count; the live pager's `split: trace` option.
  bool split_by_trace = false;
  SplitObjective split_objective = SplitObjective::Reads;  // what that split minimises
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
  virtual int32_t choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                                uint64_t now) = 0;
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
  std::vector<double> rank_;           // [expert] log2(score) + updated / H: the victim order (-inf: unused)
  std::vector<uint32_t> slot_expert_;  // [slot]
  std::vector<uint64_t> last_use_;     // [slot]
};

class S3FifoPolicy final : public Policy {
 public:
  S3FifoPolicy(uint32_t n_slots, uint32_t n_experts);
  PolicyKind kind() const override { return PolicyKind::S3Fifo; }
  void on_insert(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_access(uint32_t slot, uint32_t expert, uint64_t now) override;
  void on_evict(uint32_t slot, uint32_t expert) override;
  int32_t choose_victim(std::span<const uint32_t> candidates, std::span<const uint8_t> protected_slots,
                        uint64_t now) override;

 private:
  bool in_ghost(uint32_t expert) const;
  uint32_t small_target_;              // probation's share of the slots
  uint64_t ghost_capacity_;            // ghost entries remembered (one per slot)
  uint64_t ghost_clock_ = 0;           // counts evictions from probation
  std::vector<uint64_t> ghost_at_;     // [expert] ghost_clock_ + 1 when evicted from probation, 0 never
  std::vector<uint8_t> small_;         // [slot] 1: probation, 0: main
  std::vector<uint8_t> freq_;          // [slot] hits since it entered its queue, capped at 3
  std::vector<uint8_t> fresh_;         // [slot] inserted, its first on_access not yet seen
  std::vector<uint64_t> queued_at_;    // [slot] when it entered its queue (FIFO order)
  std::vector<uint32_t> slot_expert_;  // [slot]
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
