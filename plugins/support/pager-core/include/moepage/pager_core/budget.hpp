// Budget sizing for paged pagers: how many expert slots per layer a memory budget buys, and the
// honest answers when it buys too few (an error with the minimum) or everything (paging off).
//
//   slots per layer = budget / (paged layers x bytes per expert), capped at the expert count
//   auto budget     = available memory after the dense weights are placed - reserve
// The caller measures "available" (MemAvailable on the CPU device, free device memory on a GPU);
// this file does no I/O.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace moepage::pager {

inline constexpr uint64_t kDefaultReserveBytes = 8ull << 30;  // 8 GiB

struct BudgetInputs {
  bool is_auto = false;                           // budget: auto
  uint64_t budget_bytes = 0;                      // explicit budget (ignored when is_auto)
  uint64_t reserve_bytes = kDefaultReserveBytes;  // auto only: left for everything else
  // Memory available after the dense weights are placed; nullopt when it could not be read, with
  // the reason in available_error. Required for auto; with an explicit budget it only adds a
  // warning to the message when the slot pools would not fit.
  std::optional<uint64_t> available_bytes;
  std::string available_error;
  uint32_t paged_layers = 0;  // layers whose routed experts are paged
  uint32_t n_experts = 0;     // routed experts per layer
  uint32_t top_k = 0;         // experts a token uses per layer
  uint64_t expert_bytes = 0;  // one slot: every part of one expert
};

enum class BudgetMode { Paged, HoldsAll };  // HoldsAll: one slot per expert, nothing to evict

struct BudgetDecision {
  BudgetMode mode = BudgetMode::Paged;
  uint32_t slots_per_layer = 0;  // n_experts when HoldsAll
  uint64_t budget_bytes = 0;     // the budget used (after auto)
  uint64_t pool_bytes = 0;       // slots x paged layers x bytes per expert
  std::string message;           // one line for the log
};

// Throws PagerError(ErrorKind::Budget) with one line saying what went wrong and what would work.
BudgetDecision decide_budget(const BudgetInputs& in);

}  // namespace moepage::pager
