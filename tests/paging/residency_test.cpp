// The paged pager's residency (ABI 1.11): what a host may read on the device without acquiring.
// Through the deferred transport (bytes land only when asked), so the test sees that an expert is
// reported only once its bytes are in its slot and committed: a hit at once, a miss after its
// acquire finished, a prefetch after a request waited for its read; an evicted expert the moment
// the call that evicted it returns; and that other layers' answers never move.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "deferred_transport.hpp"

using namespace moepage::test;

namespace {

struct Answer {
  uint64_t generation = 0;
  std::vector<void*> slots;
  bool operator==(const Answer& o) const { return slots == o.slots; }
};

Answer residency(mp::PagerHandle& pager, uint32_t layer, uint32_t experts) {
  Answer a;
  a.slots.assign(experts, nullptr);
  REQUIRE(pager.residency(layer, a.slots, a.generation));
  return a;
}

// The experts the answer reports, ascending; each one's slot must hold its bytes.
std::vector<int32_t> reported(const SplitBench& b, uint32_t layer, const Answer& a) {
  std::vector<int32_t> out;
  for (uint32_t e = 0; e < a.slots.size(); ++e) {
    if (a.slots[e] == nullptr) continue;
    CHECK_MESSAGE(b.model.slot_holds(a.slots[e], layer, e), "layer ", layer, " expert ", e);
    out.push_back(int32_t(e));
  }
  return out;
}

}  // namespace

TEST_CASE("residency reports an expert once its bytes are committed in its slot, and drops it when evicted") {
  SplitBench b(3, {}, "lru");  // evictions by recency, so the test knows each victim
  const uint32_t E = b.model.n_experts;
  REQUIRE(mp_pager_offers_residency(b.pager.ref().vtable));
  const Answer other = residency(b.pager, 1, E);
  Answer last = residency(b.pager, 2, E);
  CHECK(reported(b, 2, last).empty());
  // Every step below changes layer 2's answer: its generation must move each time, and layer 1's
  // answer never.
  auto step = [&](const std::vector<int32_t>& expected) {
    const Answer now = residency(b.pager, 2, E);
    CHECK(reported(b, 2, now) == expected);
    CHECK(now.generation != last.generation);
    CHECK(residency(b.pager, 1, E) == other);
    last = now;
    return now;
  };

  const Acquired first = acquire(b.pager, 2, {0, 1});  // plain acquire waits: both valid
  const Answer after_first = step({0, 1});
  CHECK(after_first.slots[0] == first.slots[0]);
  CHECK(after_first.slots[1] == first.slots[1]);

  Started s = start(b.pager, 2, {1, 4});  // 4 misses into the third slot
  step({0, 1});                           // 4 is still being read: not reported
  CHECK(b.pager.acquire_await(2, 1) != nullptr);
  CHECK(reported(b, 2, residency(b.pager, 2, E)) == std::vector<int32_t>{0, 1});  // landed, not committed
  b.pager.acquire_finish(2);
  CHECK(step({0, 1, 4}).slots[4] == s.slots[1]);

  b.pager.begin_token(100);
  Started evicting = start(b.pager, 2, {5});  // evicts 0, the least recently used
  step({1, 4});
  b.pager.acquire_finish(2);
  step({1, 4, 5});

  b.pager.begin_token(101);
  REQUIRE(b.pager.hint(2, std::vector<int32_t>{6}));  // evicts 1; its read has not landed
  step({4, 5});
  acquire(b.pager, 2, {6});  // the request waits for the prefetch's read
  step({4, 5, 6});
}

TEST_CASE("residency refuses a wrong slot count and a layer without experts, naming the layer") {
  SplitBench b(3);
  std::vector<void*> slots(b.model.n_experts - 1, nullptr);
  uint64_t generation = 0;
  CHECK_THROWS_WITH_AS(b.pager.residency(2, slots, generation), doctest::Contains("residency of layer 2"),
                       mp::PluginError);
  slots.assign(b.model.n_experts, nullptr);
  CHECK_THROWS_WITH_AS(b.pager.residency(99, slots, generation), doctest::Contains("layer 99"), mp::PluginError);
  // The generation alone needs no slots.
  CHECK(b.pager.residency(2, {}, generation));
}
