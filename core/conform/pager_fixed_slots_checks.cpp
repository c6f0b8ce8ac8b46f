// Pager checks of fixed_slots (ABI 1.8, pager.h): a pager that reports a layer's slots fixed
// counts no access for it, and every acquire of that layer, before and after other layers' and its
// own, returns exactly those slots. A pager without the call passes trivially.
#include <string>
#include <vector>

#include "conform/pager_fixture.hpp"

namespace moepage::conform {
namespace {

// The slots one acquire of `experts` returns, as a token of its own.
std::vector<void*> acquired_slots(PagerContext& ctx, Stack& s, uint32_t layer, const std::vector<int32_t>& experts) {
  s.pager.begin_token(++ctx.token);
  std::vector<void*> slots(experts.size(), nullptr);
  mp_acquire_result r{};
  r.struct_size = sizeof r;
  r.slots = slots.data();
  s.pager.acquire(layer, experts, &r);
  return slots;
}

void fixed_slots_are_acquires(PagerContext& ctx) {
  std::unique_ptr<Stack> s = ctx.make_stack();
  std::vector<std::vector<void*>> fixed(kLayers, std::vector<void*>(kExperts, nullptr));
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    if (layer == kLayerWithoutExperts) continue;
    const mp_pager_stats before = s->pager.stats();
    if (!s->pager.fixed_slots(layer, fixed[layer])) return;  // slots that may move: nothing to check
    const mp_pager_stats after = s->pager.stats();
    expect(after.accesses == before.accesses, "fixed_slots of layer " + std::to_string(layer) + " counted " +
                                                  std::to_string(after.accesses - before.accesses) + " accesses");
    for (uint32_t e = 0; e < kExperts; ++e)
      expect(fixed[layer][e] != nullptr,
             "fixed_slots gave layer " + std::to_string(layer) + " expert " + std::to_string(e) + " no slot");
  }
  for (int round = 0; round < 2; ++round)
    for (uint32_t layer = 0; layer < kLayers; ++layer) {
      if (layer == kLayerWithoutExperts) continue;
      const std::vector<int32_t> experts = ctx.random_experts(kTopK);
      const std::vector<void*> got = acquired_slots(ctx, *s, layer, experts);
      for (size_t i = 0; i < experts.size(); ++i)
        expect(got[i] == fixed[layer][size_t(experts[i])],
               "layer " + std::to_string(layer) + " expert " + std::to_string(experts[i]) +
                   ": acquire returned another slot than fixed_slots reported");
    }
}

}  // namespace

std::vector<PagerCheck> pager_fixed_slots_checks() {
  return {
      {"fixed slots, when offered, count no access and are the slots every acquire returns (ABI 1.8)",
       &fixed_slots_are_acquires, 8},
  };
}

}  // namespace moepage::conform
