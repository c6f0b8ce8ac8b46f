// Pager checks of residency (ABI 1.11, pager.h): what a pager reports valid is what a host may read
// without acquiring, so every reported slot holds its expert's bytes, an acquire of a reported
// expert returns that slot, asking counts no access, a layer's answer moves only in calls naming
// it, and the generation moves whenever the answer does. A pager without the call passes trivially.
#include <string>
#include <vector>

#include "conform/pager_fixture.hpp"

namespace moepage::conform {
namespace {

struct Residency {
  uint64_t generation = 0;
  std::vector<void*> slots;
};

// The pager's answer for `layer`; false when it offers no residency for it.
bool residency_of(Stack& s, uint32_t layer, Residency& out) {
  out.slots.assign(kExperts, nullptr);
  return s.pager.residency(layer, out.slots, out.generation);
}

std::string expert_name(uint32_t layer, uint32_t expert) {
  return "layer " + std::to_string(layer) + " expert " + std::to_string(expert);
}

// Every expert the answer reports, checked part by part against the file.
void verify_reported(PagerContext& ctx, uint32_t layer, const Residency& r) {
  std::vector<int32_t> experts;
  std::vector<void*> slots;
  for (uint32_t e = 0; e < kExperts; ++e)
    if (r.slots[e] != nullptr) {
      experts.push_back(int32_t(e));
      slots.push_back(r.slots[e]);
    }
  if (!experts.empty()) ctx.verify_slots(layer, experts, slots);
}

// Acquires `experts` of `layer` as a token of its own (split when asked), returning the slots.
std::vector<void*> acquire_slots(PagerContext& ctx, Stack& s, uint32_t layer, const std::vector<int32_t>& experts,
                                 bool split) {
  s.pager.begin_token(++ctx.token);
  std::vector<void*> slots(experts.size(), nullptr);
  if (split) {
    ctx.start_and_await(s.pager, layer, experts, slots);
    s.pager.acquire_finish(layer);
    return slots;
  }
  mp_acquire_result r{};
  r.struct_size = sizeof r;
  r.slots = slots.data();
  s.pager.acquire(layer, experts, &r);
  const mp_device_service* dev = ctx.host->device;
  if (r.ready != nullptr)
    expect(dev->event_synchronize(dev->ctx, r.ready) == MP_OK, "waiting for the acquire's ready event failed");
  return slots;
}

void residency_is_what_a_reader_may_use(PagerContext& ctx) {
  std::unique_ptr<Stack> s = ctx.make_stack();
  Residency probe;
  if (!residency_of(*s, 1, probe)) return;  // not offered: nothing to check
  std::vector<Residency> before(kLayers);
  for (int round = 0; round < 24; ++round) {
    const uint32_t layer = 1 + uint32_t(round) % (kLayers - 1);
    const mp_pager_stats stats_before = s->pager.stats();
    for (uint32_t l = 1; l < kLayers; ++l) expect(residency_of(*s, l, before[l]), "residency offered for layer 1 only");
    const mp_pager_stats stats_after = s->pager.stats();
    expect(stats_after.accesses == stats_before.accesses,
           "residency counted " + std::to_string(stats_after.accesses - stats_before.accesses) + " accesses");
    const std::vector<int32_t> experts = ctx.random_experts(kTopK);
    const std::vector<void*> got = acquire_slots(ctx, *s, layer, experts, ctx.offers_split() && round % 2 == 1);
    for (size_t i = 0; i < experts.size(); ++i) {
      void* reported = before[layer].slots[size_t(experts[i])];
      expect(reported == nullptr || reported == got[i],
             expert_name(layer, uint32_t(experts[i])) + ": acquire returned another slot than residency reported");
    }
    for (uint32_t l = 1; l < kLayers; ++l) {
      Residency after;
      residency_of(*s, l, after);
      verify_reported(ctx, l, after);
      if (l != layer) {
        expect(after.slots == before[l].slots,
               "layer " + std::to_string(l) + "'s residency changed in an acquire of layer " + std::to_string(layer));
      } else if (after.slots != before[l].slots) {
        expect(after.generation != before[l].generation,
               "layer " + std::to_string(l) + "'s residency changed and its generation did not");
      }
    }
  }
}

void residency_refuses_a_wrong_count(PagerContext& ctx) {
  std::unique_ptr<Stack> s = ctx.make_stack();
  const mp_pager_ref ref = s->pager.ref();
  if (!mp_pager_offers_residency(ref.vtable)) return;
  std::vector<void*> slots(kExperts - 1, nullptr);
  uint64_t generation = 0;
  expect(ref.vtable->residency(ref.self, 1, slots.data(), kExperts - 1, &generation) == MP_ERR_INVALID_ARG,
         "residency with n = " + std::to_string(kExperts - 1) + " (the catalog has " + std::to_string(kExperts) +
             " experts) was not MP_ERR_INVALID_ARG");
  expect(ref.vtable->residency(ref.self, kLayers, slots.data(), kExperts, &generation) == MP_ERR_INVALID_ARG,
         "residency of layer " + std::to_string(kLayers) + " (of " + std::to_string(kLayers) +
             ") was not MP_ERR_INVALID_ARG");
}

}  // namespace

std::vector<PagerCheck> pager_residency_checks() {
  return {
      {"residency, when offered, reports only slots holding their expert's bytes, the ones acquire returns, "
       "counts no access and moves only with calls naming its layer (ABI 1.11)",
       &residency_is_what_a_reader_may_use, 11},
      {"residency, when offered, refuses a slot count other than the catalog's experts and a layer out of range",
       &residency_refuses_a_wrong_count, 11},
  };
}

}  // namespace moepage::conform
