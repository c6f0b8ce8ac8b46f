// Pager checks of the split acquire (ABI 1.5, pager.h): offered whole or not at all; byte-exact
// slots once acquire_finish returned, a repeat all hits with nothing pending; and its rules (a
// started layer refuses a second start and a plain acquire, finish without start is refused, a
// result without its pending array is refused, destroy with an acquire started works); acquires of
// several layers started together and finished late. A pager without the split acquire passes every
// check but the first trivially.
#include <cstring>

#include "conform/pager_fixture.hpp"

namespace moepage::conform {
namespace {

const mp_pager_vtable& vtable_of(PagerContext& ctx) { return *ctx.pager.descriptor->pager; }

void whole_or_none(PagerContext& ctx) {
  const mp_pager_vtable& v = vtable_of(ctx);
  if (!MP_HAS_FIELD(&v, mp_pager_vtable, acquire_start)) return;
  const int given = (v.acquire_start != nullptr) +
                    (MP_HAS_FIELD(&v, mp_pager_vtable, acquire_await) && v.acquire_await != nullptr) +
                    (MP_HAS_FIELD(&v, mp_pager_vtable, acquire_finish) && v.acquire_finish != nullptr);
  expect(given == 0 || given == 3, "the vtable offers " + std::to_string(given) +
                                       " of acquire_start, acquire_await and acquire_finish: all three or none");
}

void split_every_expert(PagerContext& ctx) {
  if (!ctx.offers_split()) return;
  std::unique_ptr<Stack> s = ctx.make_stack();
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    if (layer == kLayerWithoutExperts) continue;
    const std::vector<int32_t> order = ctx.random_experts(kExperts);
    for (uint32_t at = 0; at < kExperts; at += kTopK)
      ctx.acquire_and_verify(s->pager, layer, {order.begin() + at, order.begin() + at + kTopK}, nullptr, true);
  }
  const std::vector<int32_t> experts = ctx.random_experts(kTopK);
  ctx.acquire_and_verify(s->pager, 2, experts, nullptr, true);
  const mp_pager_stats before = s->pager.stats();
  std::vector<void*> slots(experts.size());
  std::vector<uint8_t> pending(experts.size(), 2);
  mp_acquire_result r{};
  r.struct_size = sizeof r;
  r.slots = slots.data();
  r.pending = pending.data();
  s->pager.acquire_start(2, experts, &r);
  s->pager.acquire_finish(2);
  for (size_t i = 0; i < experts.size(); ++i)
    expect(pending[i] == 0, "expert " + std::to_string(experts[i]) + " just acquired is pending again");
  const mp_pager_stats after = s->pager.stats();
  expect(after.hits - before.hits == experts.size(), "the repeated split acquire counted " +
                                                         std::to_string(after.hits - before.hits) + " hits for " +
                                                         std::to_string(experts.size()) + " experts just acquired");
}

void split_rules(PagerContext& ctx) {
  if (!ctx.offers_split()) return;
  const mp_pager_vtable& v = vtable_of(ctx);
  std::unique_ptr<Stack> s = ctx.make_stack();
  void* self = s->pager.ref().self;
  const std::vector<int32_t> experts = ctx.random_experts(kTopK);
  std::vector<void*> slots(experts.size());
  std::vector<uint8_t> pending(experts.size());
  mp_acquire_result r{};
  r.slots = slots.data();
  r.pending = pending.data();
  const uint32_t n = static_cast<uint32_t>(experts.size());

  r.struct_size = offsetof(mp_acquire_result, pending);  // a 1.4 result: no room for pending
  mp_status st = v.acquire_start(self, 2, experts.data(), n, &r);
  expect(st == MP_ERR_INVALID_ARG,
         std::string("acquire_start with a result without pending returned ") + mp_status_name(st));
  st = v.acquire_finish(self, 2);
  expect(st == MP_ERR_INVALID_ARG,
         std::string("acquire_finish of a layer with nothing started returned ") + mp_status_name(st));

  r.struct_size = sizeof r;
  st = v.acquire_start(self, 2, experts.data(), n, &r);
  expect(st == MP_OK, std::string("acquire_start failed: ") + mp_status_name(st));
  st = v.acquire_start(self, 2, experts.data(), n, &r);
  expect(st == MP_ERR_INVALID_ARG,
         std::string("a second acquire_start of a started layer returned ") + mp_status_name(st));
  st = v.acquire(self, 2, experts.data(), n, &r);
  expect(st == MP_ERR_INVALID_ARG, std::string("a plain acquire of a started layer returned ") + mp_status_name(st));
  mp_event ready = nullptr;
  st = v.acquire_await(self, 2, n, &ready);
  expect(st == MP_ERR_INVALID_ARG,
         std::string("acquire_await of an index past the request returned ") + mp_status_name(st));
  st = v.acquire_finish(self, 2);
  expect(st == MP_OK, std::string("acquire_finish failed: ") + mp_status_name(st));
  st = v.acquire_finish(self, 2);
  expect(st == MP_ERR_INVALID_ARG, std::string("a second acquire_finish returned ") + mp_status_name(st));
  ctx.acquire_and_verify(s->pager, 2, experts, nullptr, true);  // still serves, byte-exact

  // Destroyed with an acquire started: its reads are dropped, nothing hangs or faults.
  const std::vector<int32_t> others = ctx.random_experts(kTopK);
  st = v.acquire_start(self, 3, others.data(), n, &r);
  expect(st == MP_OK, std::string("acquire_start failed: ") + mp_status_name(st));
  s.reset();
}

// What the deepseek4 GPU forward does under its option defer_acquire_finish: a token's layers are
// started one after another, each layer's pending experts awaited, and every layer is finished only
// once the last one is started. Three tokens, so the later ones meet hits and evictions as well.
void split_layers_together(PagerContext& ctx) {
  if (!ctx.offers_split()) return;
  std::unique_ptr<Stack> s = ctx.make_stack();
  std::vector<std::vector<int32_t>> experts(kLayers);
  std::vector<std::vector<void*>> slots(kLayers);
  for (int token = 0; token < 3; ++token) {
    s->pager.begin_token(++ctx.token);
    for (uint32_t layer = 0; layer < kLayers; ++layer) {
      if (layer == kLayerWithoutExperts) continue;
      experts[layer] = ctx.random_experts(kTopK);
      ctx.start_and_await(s->pager, layer, experts[layer], slots[layer]);
    }
    for (uint32_t layer = 0; layer < kLayers; ++layer)
      if (layer != kLayerWithoutExperts) s->pager.acquire_finish(layer);
    for (uint32_t layer = 0; layer < kLayers; ++layer)
      if (layer != kLayerWithoutExperts) ctx.verify_slots(layer, experts[layer], slots[layer]);
  }
}

}  // namespace

std::vector<PagerCheck> pager_split_checks() {
  return {
      {"the split acquire is offered whole (acquire_start, acquire_await, acquire_finish) or not at all (ABI 1.5)",
       &whole_or_none, 5},
      {"a split acquire, when offered, gives byte-exact slots of every expert once finished; a repeat is all hits "
       "with nothing pending (ABI 1.5)",
       &split_every_expert, 5},
      {"a split acquire keeps its rules: no second start or plain acquire of a started layer, no finish without a "
       "start, a result with room for pending; destroy with one started works (ABI 1.5)",
       &split_rules, 5},
      {"split acquires of every layer started before any is finished give byte-exact slots once finished, token "
       "after token (a host may finish late: deepseek4's defer_acquire_finish) (ABI 1.5)",
       &split_layers_together, 5},
  };
}

}  // namespace moepage::conform
