// Pager checks of acquire and statistics on the shared instance: byte-exact slots, hits on a
// repeat, prefill bands, consistent counters and output structs, refusals, traces, lifetimes.
#include <algorithm>
#include <cstring>

#include "conform/pager_fixture.hpp"

namespace moepage::conform {
namespace {

void every_expert(PagerContext& ctx) {
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    if (layer == kLayerWithoutExperts) continue;
    std::vector<int32_t> order = ctx.random_experts(kExperts);
    for (uint32_t at = 0; at < kExperts; at += kTopK) {
      const std::vector<int32_t> group(order.begin() + at, order.begin() + at + kTopK);
      ctx.acquire_and_verify(ctx.stack->pager, layer, group);
      ctx.requested += group.size();
    }
  }
}

void repeat_hits(PagerContext& ctx) {
  mp::PagerHandle& p = ctx.stack->pager;
  const std::vector<int32_t> experts = ctx.random_experts(kTopK);
  ctx.acquire_and_verify(p, 1, experts);
  const mp_pager_stats before = p.stats();
  ctx.acquire_and_verify(p, 1, experts);
  const mp_pager_stats after = p.stats();
  ctx.requested += 2 * experts.size();
  expect(after.hits - before.hits == experts.size(), "the second acquire counted " +
                                                         std::to_string(after.hits - before.hits) + " hits for " +
                                                         std::to_string(experts.size()) + " experts just acquired");
}

void prefill_band(PagerContext& ctx) {
  // A band larger than a layer's slots cannot be held at once; pagers may refuse it.
  mp::PagerHandle& p = ctx.stack->pager;
  const uint32_t slots = p.stats().slots_per_layer;
  const uint32_t band = slots > 0 ? std::min(kTopK * 2 + 1, slots) : kTopK * 2 + 1;
  const std::vector<int32_t> experts = ctx.random_experts(band);
  ctx.acquire_and_verify(p, 3, experts);
  ctx.requested += experts.size();
}

void consistent_stats(PagerContext& ctx) {
  mp::PagerHandle& p = ctx.stack->pager;
  const mp_pager_stats s = p.stats();
  expect(s.accesses == s.hits + s.misses, "accesses " + std::to_string(s.accesses) + " != hits " +
                                              std::to_string(s.hits) + " + misses " + std::to_string(s.misses));
  expect(s.accesses == ctx.requested, "accesses " + std::to_string(s.accesses) + ", but " +
                                          std::to_string(ctx.requested) + " expert uses were requested");
  uint64_t accesses = 0, hits = 0, misses = 0;
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    const mp_pager_layer_stats l = p.layer_stats(layer);
    accesses += l.accesses;
    hits += l.hits;
    misses += l.misses;
  }
  expect(accesses == s.accesses && hits == s.hits && misses == s.misses,
         "per-layer stats sum to " + std::to_string(accesses) + "/" + std::to_string(hits) + "/" +
             std::to_string(misses) + ", totals are " + std::to_string(s.accesses) + "/" + std::to_string(s.hits) +
             "/" + std::to_string(s.misses));
}

// Calls `fill(out)` on a guarded struct of `size` bytes; expects ok and nothing written past
// `size`, struct_size left alone; then struct_size 0: invalid-arg and nothing written at all.
template <class S, class Fill>
void check_output_struct(const char* call, uint32_t size, uint32_t minor, Fill&& fill) {
  struct Guarded {
    S s;
    unsigned char tail[16];
  } g;
  std::memset(&g, 0x5A, sizeof g);
  g.s.struct_size = size;
  mp_status st = fill(&g.s);
  expect(st == MP_OK,
         std::string(call) + " with struct_size " + std::to_string(size) + " failed: " + mp_status_name(st));
  expect(g.s.struct_size == size, std::string(call) + " changed the caller's struct_size");
  const auto* bytes = reinterpret_cast<const unsigned char*>(&g);
  for (size_t i = size; i < sizeof g; ++i)
    expect(bytes[i] == 0x5A,
           std::string(call) + " wrote byte " + std::to_string(i) + ", past struct_size " + std::to_string(size));
  if (minor < 4) return;  // what 0 means was written down in 1.4
  std::memset(&g, 0x5A, sizeof g);
  g.s.struct_size = 0;
  st = fill(&g.s);
  expect(st == MP_ERR_INVALID_ARG, std::string(call) + " with struct_size 0 returned " + mp_status_name(st) +
                                       ", expected invalid-arg (0 never means the full size)");
  for (size_t i = sizeof(uint32_t); i < sizeof g; ++i)
    expect(bytes[i] == 0x5A, std::string(call) + " with struct_size 0 wrote byte " + std::to_string(i));
}

void output_structs(PagerContext& ctx) {
  const mp_pager_vtable& v = *ctx.pager.descriptor->pager;
  void* self = ctx.stack->pager.ref().self;
  const uint32_t minor = ctx.pager.abi_minor;
  check_output_struct<mp_pager_stats>("stats", offsetof(mp_pager_stats, predictions), minor,
                                      [&](mp_pager_stats* out) { return v.stats(self, out); });
  check_output_struct<mp_pager_layer_stats>("layer_stats", offsetof(mp_pager_layer_stats, misses), minor,
                                            [&](mp_pager_layer_stats* out) { return v.layer_stats(self, 1, out); });
  if (minor < 4) return;
  std::vector<void*> slots(1, nullptr);
  mp_acquire_result r{};
  r.slots = slots.data();  // struct_size 0: refused before anything is read
  const int32_t expert = 0;
  const mp_status st = v.acquire(self, 1, &expert, 1, &r);
  expect(st == MP_ERR_INVALID_ARG,
         std::string("acquire with a result of struct_size 0 returned ") + mp_status_name(st));
  expect(slots[0] == nullptr && r.ready == nullptr && r.table_changed == 0,
         "acquire wrote into a result of struct_size 0");
}

void expert_out_of_range(PagerContext& ctx) {
  for (const int32_t bad : {static_cast<int32_t>(kExperts), -1}) {
    const mp::PluginError e = expect_failure<mp::PluginError>(
        [&] { ctx.acquire_and_verify(ctx.stack->pager, 1, {bad}); }, "acquiring expert " + std::to_string(bad));
    expect(std::string(e.what()).find("no message") == std::string::npos, "the failure carries no message");
  }
}

void layer_out_of_range(PagerContext& ctx) {
  const mp::PluginError e =
      expect_failure<mp::PluginError>([&] { ctx.acquire_and_verify(ctx.stack->pager, kLayers, {0}); },
                                      "acquiring from layer " + std::to_string(kLayers));
  expect(std::string(e.what()).find("no message") == std::string::npos, "the failure carries no message");
}

void serves_after_refusals(PagerContext& ctx) {
  ctx.acquire_and_verify(ctx.stack->pager, 2, ctx.random_experts(kTopK));
}

void trace_events(PagerContext& ctx) {
  struct Counter {
    uint64_t events = 0, hits = 0;
  } counter;
  const mp_trace_fn fn = [](void* c, const mp_trace_event* e) {
    if (MP_HAS_FIELD(e, mp_trace_event, kind) && e->kind != MP_TRACE_ACCESS) return;  // predictions (1.3)
    auto* k = static_cast<Counter*>(c);
    ++k->events;
    k->hits += e->hit;
  };
  mp::PagerHandle& p = ctx.stack->pager;
  if (!p.set_trace(fn, &counter)) return;  // optional in the ABI
  const mp_pager_stats before = p.stats();
  ctx.acquire_and_verify(p, 1, ctx.random_experts(kTopK));
  ctx.acquire_and_verify(p, 3, ctx.random_experts(kTopK));
  const mp_pager_stats after = p.stats();
  p.set_trace(nullptr, nullptr);
  expect(counter.events == after.accesses - before.accesses, std::to_string(counter.events) + " trace events for " +
                                                                 std::to_string(after.accesses - before.accesses) +
                                                                 " accesses");
  expect(counter.hits == after.hits - before.hits, "trace hits disagree with stats hits");
}

void create_destroy(PagerContext& ctx) {
  for (int i = 0; i < 10; ++i) ctx.make_stack();
}

}  // namespace

std::vector<PagerCheck> pager_checks() {
  return {
      {"acquire returns byte-exact slots for every expert of every layer", &every_expert},
      {"acquiring the same experts twice in a row gives the same bytes, the second time as hits", &repeat_hits},
      {"acquire of a prefill band (more than top_k experts, up to the slots per layer) is byte-exact", &prefill_band},
      {"stats are consistent: accesses = hits + misses = experts requested; layers sum to the total",
       &consistent_stats},
      {"stats, layer_stats and acquire keep to the caller's struct_size (and, since 1.4, refuse struct_size 0)",
       &output_structs},
      {"acquiring an expert outside the catalog fails with a message", &expert_out_of_range},
      {"acquiring from a layer outside the catalog fails with a message", &layer_out_of_range},
      {"the pager keeps serving byte-exact experts after refused calls", &serves_after_refusals},
      {"a trace, when supported, gets one event per expert access", &trace_events},
      {"creating and destroying an instance 10 times works every time", &create_destroy},
  };
}

}  // namespace moepage::conform
