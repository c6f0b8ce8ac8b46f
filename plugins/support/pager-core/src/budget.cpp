#include "moepage/pager_core/budget.hpp"

#include <algorithm>

#include "moepage/pager_core/errors.hpp"
#include "units/byte_size.hpp"

namespace moepage::pager {

using units::checked_mul;
using units::format_bytes;

namespace {

[[noreturn]] void fail_budget(const std::string& message) { throw PagerError(ErrorKind::Budget, message); }

uint64_t mul_or_fail(uint64_t a, uint64_t b, const char* what) {
  const auto r = checked_mul(a, b);
  if (!r) fail_budget(std::string("budget: ") + what + " does not fit in 64 bits");
  return *r;
}

}  // namespace

BudgetDecision decide_budget(const BudgetInputs& in) {
  if (in.n_experts == 0) fail_budget("budget: the model has no routed experts per layer");
  if (in.top_k == 0 || in.top_k > in.n_experts)
    fail_budget("budget: top-k " + std::to_string(in.top_k) + " must be in 1.." + std::to_string(in.n_experts));
  if (in.paged_layers > 0 && in.expert_bytes == 0) fail_budget("budget: the expert catalog reports 0 bytes per expert");

  BudgetDecision d;
  std::string budget_words;  // "budget 8.0 GiB" or "budget 8.0 GiB (auto: ...)"
  if (in.is_auto) {
    if (!in.available_bytes)
      fail_budget("budget auto: cannot read the available memory (" +
                  (in.available_error.empty() ? std::string("no reason given") : in.available_error) +
                  "); set an explicit budget, e.g. budget: 8GiB");
    if (*in.available_bytes <= in.reserve_bytes)
      fail_budget("budget auto: " + format_bytes(*in.available_bytes) +
                  " available after the dense weights is not more than the " + format_bytes(in.reserve_bytes) +
                  " reserve; set an explicit budget or a smaller reserve");
    d.budget_bytes = *in.available_bytes - in.reserve_bytes;
    budget_words = "budget " + format_bytes(d.budget_bytes) + " (auto: " + format_bytes(*in.available_bytes) +
                   " available minus " + format_bytes(in.reserve_bytes) + " reserve)";
  } else {
    d.budget_bytes = in.budget_bytes;
    budget_words = "budget " + format_bytes(d.budget_bytes);
  }

  if (in.paged_layers == 0) {
    d.mode = BudgetMode::HoldsAll;
    d.slots_per_layer = in.n_experts;
    d.message = "no layer has routed experts to page";
    return d;
  }

  const uint64_t per_slot_all_layers = mul_or_fail(in.paged_layers, in.expert_bytes, "paged layers x expert bytes");
  const uint64_t all_bytes = mul_or_fail(per_slot_all_layers, in.n_experts, "the size of every expert");
  const std::string layers_words = std::to_string(in.paged_layers) + " paged layer" + (in.paged_layers == 1 ? "" : "s");
  const uint64_t slots = d.budget_bytes / per_slot_all_layers;

  if (slots >= in.n_experts) {
    d.mode = BudgetMode::HoldsAll;
    d.slots_per_layer = in.n_experts;
    d.pool_bytes = all_bytes;
    d.message = budget_words + " holds every expert (" + std::to_string(in.n_experts) + " per layer over " +
                layers_words + ", " + format_bytes(all_bytes) +
                "): one slot per expert, each filled on first use, none evicted";
    return d;
  }
  if (slots < in.top_k) {
    const uint64_t minimum = mul_or_fail(per_slot_all_layers, in.top_k, "the minimum budget");
    fail_budget(budget_words + " buys " + std::to_string(slots) + " slot" + (slots == 1 ? "" : "s") +
                " per layer over " + layers_words + " (" + format_bytes(in.expert_bytes) +
                " per expert); top-k needs " + std::to_string(in.top_k) + " slots: minimum budget " +
                format_bytes(minimum));
  }
  d.mode = BudgetMode::Paged;
  d.slots_per_layer = uint32_t(slots);
  d.pool_bytes = slots * per_slot_all_layers;  // <= budget, cannot overflow
  d.message = budget_words + " buys " + std::to_string(slots) + " slots per layer over " + layers_words + " (" +
              format_bytes(in.expert_bytes) + " per expert): " + format_bytes(d.pool_bytes) + " of slot pools, " +
              std::to_string(slots) + " of " + std::to_string(in.n_experts) + " experts per layer";
  // An explicit budget is the user's call, but say so when the machine cannot back it.
  if (!in.is_auto && in.available_bytes && d.pool_bytes > *in.available_bytes)
    d.message += "; warning: more than the " + format_bytes(*in.available_bytes) + " available";
  return d;
}

}  // namespace moepage::pager
