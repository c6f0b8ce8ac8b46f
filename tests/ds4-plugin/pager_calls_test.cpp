// deepseek4's PagerCalls over the split acquire (ABI 1.5) and over a pager without it: with the
// split, start/await/finish reach the pager and a failed finish throws with the pager's status
// and message; without it (a 1.4 vtable, or the calls absent), acquire_start is plain acquire with
// nothing pending and its ready event, await and finish do nothing; the same when the arch option
// hits_first is false. The band: every expert, or the pool's slots capped by paged_band and never
// below top_k. In-process pager doubles.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "deepseek4/plugin/pager_calls.hpp"
#include "deepseek4/plugin/routing_replay.hpp"
#include "moepage/cpp/error.hpp"

using moepage::ds4::PagerCalls;

namespace {

// What the double saw and answers; one instance per test.
struct Double {
  std::vector<std::byte> pool = std::vector<std::byte>(64 * 8);
  int acquires = 0, starts = 0, awaits = 0, finishes = 0;
  bool fail_finish = false;
  uint32_t slots = 0;  // slots per layer the stats report; 0: a resident pager
  mp_event plain_ready = reinterpret_cast<mp_event>(uintptr_t(0x77));
  std::vector<std::string> calls;  // "acquire L" and "hint L: e e ..." in the order they came
};
Double* g = nullptr;

mp_status plain_acquire(void*, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
  ++g->acquires;
  g->calls.push_back("acquire " + std::to_string(layer));
  for (uint32_t i = 0; i < n; ++i) out->slots[i] = g->pool.data() + 64 * experts[i];
  out->ready = g->plain_ready;
  return MP_OK;
}
mp_status start(void*, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
  ++g->starts;
  g->calls.push_back("acquire " + std::to_string(layer));
  for (uint32_t i = 0; i < n; ++i) {
    out->slots[i] = g->pool.data() + 64 * experts[i];
    out->pending[i] = experts[i] % 2;  // odd experts are being read
  }
  out->ready = nullptr;
  return MP_OK;
}
mp_status await(void*, uint32_t, uint32_t index, mp_event* ready) {
  ++g->awaits;
  *ready = reinterpret_cast<mp_event>(uintptr_t(0x100 + index));
  return MP_OK;
}
mp_status finish(void*, uint32_t) {
  ++g->finishes;
  return g->fail_finish ? MP_ERR_DEVICE : MP_OK;
}
mp_status stats(void*, mp_pager_stats* out) {
  std::memset(reinterpret_cast<char*>(out) + sizeof(uint32_t), 0, out->struct_size - sizeof(uint32_t));
  out->resident = g->slots == 0 ? 1 : 0;
  out->slots_per_layer = g->slots;
  return MP_OK;
}
mp_status hint(void*, uint32_t layer, const int32_t* experts, uint32_t n) {
  std::string line = "hint " + std::to_string(layer) + ":";
  for (uint32_t i = 0; i < n; ++i) line += " " + std::to_string(experts[i]);
  g->calls.push_back(line);
  return MP_OK;
}
const char* last_error(void*) { return "layer 3 expert 5 (w2): injected"; }

mp_pager_vtable vtable(bool split) {
  mp_pager_vtable v{};
  v.struct_size = split ? sizeof v : uint32_t(offsetof(mp_pager_vtable, acquire_start));  // a 1.4 pager
  v.last_error = &last_error;
  v.acquire = &plain_acquire;
  v.stats = &stats;
  if (split) v.hint = &hint;
  if (split) {
    v.acquire_start = &start;
    v.acquire_await = &await;
    v.acquire_finish = &finish;
  }
  return v;
}

// PagerCalls over the double: a split pager or a 1.4 one. The double is the global the vtable's
// functions reach.
struct Over {
  Double d;
  mp_pager_vtable v;
  int self = 0;
  PagerCalls calls;
  explicit Over(bool split)
      : v((g = &d, vtable(split))), calls(nullptr, mp_pager_ref{sizeof(mp_pager_ref), &v, &self}, 8, 2) {}
};

}  // namespace

TEST_CASE("PagerCalls passes the split acquire through to a pager that offers it") {
  Over over(true);
  Double& d = over.d;
  PagerCalls& calls = over.calls;
  REQUIRE(calls.splits());
  const int32_t experts[3] = {2, 5, 7};
  const std::byte* slots[3] = {};
  uint8_t pending[3] = {9, 9, 9};
  CHECK(calls.acquire_start(4, experts, 3, slots, pending) == nullptr);
  CHECK(pending[0] == 0);
  CHECK(pending[1] == 1);
  CHECK(pending[2] == 1);
  CHECK(slots[1] == d.pool.data() + 64 * 5);
  CHECK(calls.acquire_await(4, 1) == reinterpret_cast<mp_event>(uintptr_t(0x101)));
  calls.acquire_finish(4);
  CHECK((d.starts == 1 && d.awaits == 1 && d.finishes == 1 && d.acquires == 0));
  d.fail_finish = true;
  calls.acquire_start(4, experts, 3, slots, pending);
  try {
    calls.acquire_finish(4);
    FAIL("a failed finish was not reported");
  } catch (const mp::Error& e) {
    CHECK(e.status() == MP_ERR_DEVICE);  // the pager's status travels unchanged
    CHECK(std::string(e.what()).find("acquire_finish") != std::string::npos);
    CHECK(std::string(e.what()).find("layer 3 expert 5 (w2)") != std::string::npos);
  }
}

TEST_CASE("PagerCalls takes plain acquire for a pager without the split acquire (ABI 1.4), or when told to") {
  // told to: the arch option hits_first: false, on a pager that offers the split.
  for (const bool split_pager : {false, true}) {
    CAPTURE(split_pager);
    Over over(split_pager);
    Double& d = over.d;
    PagerCalls& calls = over.calls;
    CHECK(calls.splits() == split_pager);
    if (split_pager) calls.use_plain_acquire();
    CHECK_FALSE(calls.splits());
    const int32_t experts[2] = {1, 3};
    const std::byte* slots[2] = {};
    uint8_t pending[2] = {9, 9};
    CHECK(calls.acquire_start(0, experts, 2, slots, pending) == d.plain_ready);
    CHECK(pending[0] == 0);
    CHECK(pending[1] == 0);
    CHECK(slots[1] == d.pool.data() + 64 * 3);
    CHECK(calls.acquire_await(0, 1) == nullptr);
    calls.acquire_finish(0);
    CHECK((d.acquires == 1 && d.starts == 0 && d.awaits == 0 && d.finishes == 0));
  }
}

TEST_CASE(
    "PagerCalls sizes the band: every expert when all fit, else the slots, capped by paged_band, at least top_k") {
  Double d;
  g = &d;
  const mp_pager_vtable v = vtable(true);
  int self = 0;
  const mp_pager_ref ref{sizeof(mp_pager_ref), &v, &self};
  auto band = [&](uint32_t slots, uint32_t cap) {
    d.slots = slots;
    return PagerCalls(nullptr, ref, 8, 2, cap).band();  // 8 experts per layer, top_k 2
  };
  CHECK(band(0, 0) == 8);  // resident
  CHECK(band(0, 3) == 8);  // a cap never splits a resident layer
  CHECK(band(8, 4) == 8);  // nor a pool that holds every expert
  CHECK(band(6, 0) == 6);
  CHECK(band(6, 4) == 4);
  CHECK(band(6, 10) == 6);
  CHECK(band(6, 1) == 2);  // top_k
}

TEST_CASE("PagerCalls hands out a pager's fixed slots (ABI 1.8), and none when it lacks or refuses them") {
  Over over(true);
  const std::byte* slots[8] = {};
  CHECK_FALSE(over.calls.fixed_slots(1, slots, 8));  // not offered
  over.v.fixed_slots = [](void*, uint32_t layer, void** out, uint32_t n) {
    if (layer == 2) return mp_status(MP_ERR_UNSUPPORTED);
    if (layer == 3) return mp_status(MP_ERR_INVALID_ARG);
    for (uint32_t i = 0; i < n; ++i) out[i] = g->pool.data() + 64 * i;
    return mp_status(MP_OK);
  };
  REQUIRE(over.calls.fixed_slots(1, slots, 8));
  CHECK(slots[5] == over.d.pool.data() + 64 * 5);
  CHECK(over.d.acquires == 0);  // asking counts no access
  CHECK_FALSE(over.calls.fixed_slots(2, slots, 8));
  CHECK_THROWS_WITH(over.calls.fixed_slots(3, slots, 8), doctest::Contains("fixed_slots"));
}

TEST_CASE(
    "PagerCalls hands a replay's predictions for layer + 1 at observe, after the layer's acquire, or at its finish") {
  // Three trace layers of 8 experts, top_k 2; layers 1 and 2 carry recorded predictions.
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("moepage-pager-calls-" + std::to_string(::getpid()) + ".trace");
  std::ofstream(path) << "# moepage-trace v4 layers=3 experts=8 top_k=2\n"
                      << "t 0\na 0 0 1\np 1 6 5 4\na 1 2 3\np 2 7 1 0\na 2 4 5\n"
                      << "t 1\na 0 1 2\np 1 3 2 1\na 1 3 4\np 2 0 6 7\na 2 5 6\n";
  moepage::ds4::Config c;
  c.n_routed_experts = 8;
  c.num_experts_per_tok = 2;
  const auto replay = moepage::ds4::RoutingReplay::load(path.string(), c);
  std::filesystem::remove(path);
  const int32_t experts[2] = {0, 1};
  const std::byte* slots[2] = {};
  uint8_t pending[2] = {};
  using moepage::ds4::PredictionTiming;
  // Each layer: two bands (start, launched, finish each), as the GPU path calls them; with_finish
  // false is the CPU path, which does neither.
  auto run = [&](PredictionTiming timing, bool with_finish) {
    Over over(true);
    over.calls.replay_predictions(replay.get(), 2, 3, timing);
    for (uint64_t position : {0, 1}) {
      over.calls.set_last_position(position);
      for (uint32_t layer = 0; layer < 3; ++layer) {
        if (layer > 0) over.calls.observe(layer - 1, nullptr, 0, nullptr);
        for (int band = 0; band < 2; ++band) {  // a second band: no second hint
          over.calls.acquire_start(layer, experts, 2, slots, pending);
          if (with_finish) {
            over.d.calls.push_back("launched " + std::to_string(layer));
            over.calls.experts_launched(layer);
            over.calls.acquire_finish(layer);
          }
        }
      }
    }
    return over.d.calls;
  };
  auto only_hints_and_acquires = [](std::vector<std::string> calls) {
    std::erase_if(calls, [](const std::string& s) { return s.starts_with("launched"); });
    return calls;
  };
  const std::vector<std::string> at_observe = {
      "acquire 0", "acquire 0", "hint 1: 6 5", "acquire 1", "acquire 1", "hint 2: 7 1", "acquire 2", "acquire 2",
      "acquire 0", "acquire 0", "hint 1: 3 2", "acquire 1", "acquire 1", "hint 2: 0 6", "acquire 2", "acquire 2"};
  const std::vector<std::string> after_acquire = {
      "acquire 0", "hint 1: 6 5", "acquire 0", "acquire 1", "hint 2: 7 1", "acquire 1", "acquire 2", "acquire 2",
      "acquire 0", "hint 1: 3 2", "acquire 0", "acquire 1", "hint 2: 0 6", "acquire 1", "acquire 2", "acquire 2"};
  // The hint comes right after the first band's "launched" marker, before the pager's finish
  // (which the double does not list).
  const std::vector<std::string> at_launched = {
      "acquire 0",   "launched 0", "hint 1: 6 5", "acquire 0", "launched 0", "acquire 1", "launched 1",
      "hint 2: 7 1", "acquire 1",  "launched 1",  "acquire 2", "launched 2", "acquire 2", "launched 2",
      "acquire 0",   "launched 0", "hint 1: 3 2", "acquire 0", "launched 0", "acquire 1", "launched 1",
      "hint 2: 0 6", "acquire 1",  "launched 1",  "acquire 2", "launched 2", "acquire 2", "launched 2"};
  CHECK(only_hints_and_acquires(run(PredictionTiming::observe, true)) == at_observe);
  CHECK(only_hints_and_acquires(run(PredictionTiming::acquire, true)) == after_acquire);
  CHECK(run(PredictionTiming::launched, true) == at_launched);
  // Without experts_launched (the CPU path) launched falls back to observe: the same hints, none twice.
  CHECK(run(PredictionTiming::launched, false) == at_observe);
  CHECK(run(PredictionTiming::observe, false) == at_observe);
}
