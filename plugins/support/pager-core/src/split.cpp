#include "moepage/pager_core/split.hpp"

#include <algorithm>
#include <string>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/simulator.hpp"

namespace moepage::pager {

namespace {

// A split hands out about this many steps per layer, whatever the budget (split.hpp).
constexpr uint64_t kStepsPerLayer = 16;

[[noreturn]] void fail_split(const std::string& message) {
  throw PagerError(ErrorKind::InvalidRequest, "slot split: " + message);
}

}  // namespace

SplitPlan split_slots_by_reuse(const Trace& trace, const SplitRequest& request) {
  const uint32_t n_layers = trace.meta.layers, n_experts = trace.meta.experts;
  if (request.min_slots == 0 || request.min_slots > n_experts)
    fail_split("the minimum slots per layer must be in 1.." + std::to_string(n_experts) + ", got " +
               std::to_string(request.min_slots));
  if (!request.layers.empty() && request.layers.size() != n_layers)
    fail_split("the layer mask has " + std::to_string(request.layers.size()) + " entries, expected " +
               std::to_string(n_layers));
  const TraceReplay replay(trace);
  std::vector<uint8_t> in_split(n_layers, 0);
  uint64_t members = 0;
  for (uint32_t l = 0; l < n_layers; ++l) {
    in_split[l] = request.layers.empty() ? uint8_t(replay.has_rows(l)) : request.layers[l];
    members += in_split[l];
  }
  if (request.total_slots < members * request.min_slots)
    fail_split(std::to_string(request.total_slots) + " slots cannot give each of " + std::to_string(members) +
               " layers its minimum of " + std::to_string(request.min_slots));

  SplitPlan plan;
  plan.slots.assign(n_layers, 0);
  plan.misses.assign(n_layers, 0);
  plan.reads.assign(n_layers, 0);
  // Slots go out in steps of `step` (one for small budgets): each step replays a whole layer of the
  // trace, so a long trace at a large budget would otherwise take a replay per slot.
  const uint64_t step = std::max<uint64_t>(1, request.total_slots / (std::max<uint64_t>(members, 1) * kStepsPerLayer));
  // next[l]: the layer's replay at slots[l] + inc[l] (inc[l] 0: the layer is full or nothing is left).
  std::vector<SimLayerResult> now(n_layers), next(n_layers);
  std::vector<uint32_t> inc(n_layers, 0);
  // Requests are cut at min_slots, the largest request a live pager with this split is likely to
  // serve (its smallest layer usually keeps the minimum); see simulate_layers.
  auto replay_at = [&](uint32_t l, uint32_t slots) {
    return replay.replay(l, slots, request.policy, request.min_slots);
  };
  const bool reads = request.objective == SplitObjective::Reads;
  auto cost = [&](const SimLayerResult& r) { return int64_t(r.misses + (reads ? r.prefetch_reads : 0)); };
  uint64_t left = request.total_slots;
  auto look_ahead = [&](uint32_t l) {
    inc[l] = uint32_t(std::min<uint64_t>({step, uint64_t(n_experts - plan.slots[l]), left}));
    if (inc[l] > 0) next[l] = replay_at(l, plan.slots[l] + inc[l]);
  };
  for (uint32_t l = 0; l < n_layers; ++l) {
    if (!in_split[l]) continue;
    plan.slots[l] = request.min_slots;
    left -= request.min_slots;
    now[l] = replay_at(l, plan.slots[l]);
  }
  for (uint32_t l = 0; l < n_layers; ++l)
    if (in_split[l]) look_ahead(l);
  while (left > 0) {
    int64_t best = -1;
    double best_gain = 0;
    for (uint32_t l = 0; l < n_layers; ++l) {
      if (!in_split[l]) continue;
      if (inc[l] > left) look_ahead(l);  // the last slots: a shorter step
      if (inc[l] == 0) continue;
      // Per slot, so steps of different lengths compare. A policy may cost more with more slots
      // (prefetch can make that happen): a negative gain.
      const double gain = double(cost(now[l]) - cost(next[l])) / double(inc[l]);
      if (best < 0 || gain > best_gain || (gain == best_gain && cost(now[l]) > cost(now[uint32_t(best)]))) {
        best = l;
        best_gain = gain;
      }
    }
    if (best < 0) break;  // every layer holds all its experts
    const uint32_t l = uint32_t(best);
    plan.slots[l] += inc[l];
    left -= inc[l];
    now[l] = next[l];
    look_ahead(l);
  }
  for (uint32_t l = 0; l < n_layers; ++l) {
    plan.misses[l] = now[l].misses;
    plan.reads[l] = now[l].misses + now[l].prefetch_reads;
  }
  plan.total_slots = request.total_slots - left;
  return plan;
}

std::string format_layer_slots(const std::vector<uint32_t>& slots) {
  std::string out;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(slots[i]);
  }
  return out;
}

}  // namespace moepage::pager
