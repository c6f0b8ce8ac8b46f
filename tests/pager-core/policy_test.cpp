// The eviction policies on their own, through the Policy interface.
#include <doctest/doctest.h>

#include <vector>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/policy.hpp"

using namespace moepage::pager;

namespace {
const std::vector<uint8_t> kNoneProtected(8, 0);
const std::vector<uint32_t> kAllSlots = {0, 1, 2, 3};
}  // namespace

TEST_CASE("policy names round-trip and unknown names are refused") {
  for (auto kind : {PolicyKind::Lru, PolicyKind::Lfu, PolicyKind::Lfru, PolicyKind::Belady, PolicyKind::S3Fifo})
    CHECK(policy_from_name(policy_name(kind)) == kind);
  CHECK_FALSE(policy_from_name("arc").has_value());
  CHECK_FALSE(policy_from_name("LRU").has_value());
}

TEST_CASE("lru evicts the slot used longest ago") {
  LruPolicy lru(4);
  for (uint32_t s = 0; s < 4; ++s) lru.on_insert(s, 10 + s, s + 1);  // times 1..4
  CHECK(lru.choose_victim(kAllSlots, kNoneProtected, 5) == 0);
  lru.on_access(0, 10, 5);  // slot 0 becomes newest: slot 1 is now the oldest
  CHECK(lru.choose_victim(kAllSlots, kNoneProtected, 6) == 1);
  lru.on_access(1, 11, 6);
  CHECK(lru.choose_victim(kAllSlots, kNoneProtected, 7) == 2);
}

TEST_CASE("every policy skips protected slots and gives -1 when all are protected") {
  for (auto kind : {PolicyKind::Lru, PolicyKind::Lfu, PolicyKind::Lfru, PolicyKind::Belady, PolicyKind::S3Fifo}) {
    CAPTURE(policy_name(kind));
    auto policy = make_policy(PolicySpec{kind, 0.0}, 4, 16);
    for (uint32_t s = 0; s < 4; ++s) {
      policy->on_insert(s, s, s + 1);
      policy->on_access(s, s, s + 1);
    }
    std::vector<uint8_t> mask(4, 1);
    CHECK(policy->choose_victim(kAllSlots, mask, 10) == -1);
    mask[2] = 0;
    CHECK(policy->choose_victim(kAllSlots, mask, 10) == 2);
    CHECK(policy->choose_victim(std::vector<uint32_t>{}, mask, 10) == -1);
  }
}

TEST_CASE("lfu evicts the least frequently used expert and breaks ties by age") {
  LfuPolicy lfu(3, 8);
  const std::vector<uint32_t> slots = {0, 1, 2};
  uint64_t t = 0;
  // Slot 0: expert 5 used three times; slot 1: expert 6 once; slot 2: expert 7 once, later.
  lfu.on_insert(0, 5, ++t);
  for (int i = 0; i < 3; ++i) lfu.on_access(0, 5, ++t);
  lfu.on_insert(1, 6, ++t);
  lfu.on_access(1, 6, t);
  lfu.on_insert(2, 7, ++t);
  lfu.on_access(2, 7, t);
  CHECK(lfu.choose_victim(slots, kNoneProtected, ++t) == 1);  // 6 and 7 tie on count; 6 is older
  lfu.on_access(1, 6, ++t);
  CHECK(lfu.choose_victim(slots, kNoneProtected, ++t) == 2);
}

TEST_CASE("lfu counts survive eviction so a hot expert returns hot") {
  LfuPolicy lfu(2, 8);
  const std::vector<uint32_t> slots = {0, 1};
  uint64_t t = 0;
  lfu.on_insert(0, 3, ++t);
  for (int i = 0; i < 5; ++i) lfu.on_access(0, 3, ++t);
  lfu.on_evict(0, 3);
  lfu.on_insert(0, 4, ++t);  // slot 0 now holds a cold expert
  lfu.on_access(0, 4, t);
  lfu.on_insert(1, 3, ++t);  // expert 3 comes back into slot 1 with its five earlier uses
  lfu.on_access(1, 3, t);
  CHECK(lfu.choose_victim(slots, kNoneProtected, ++t) == 0);
}

TEST_CASE("lfru lets a recent burst beat an old high count, unlike lfu") {
  // Expert 1 was used 6 times long ago; expert 2 three times just now. Half-life 4 events.
  auto run = [](Policy& p) {
    const std::vector<uint32_t> slots = {0, 1};
    p.on_insert(0, 1, 1);
    for (uint64_t t = 1; t <= 6; ++t) p.on_access(0, 1, t);
    p.on_insert(1, 2, 40);
    for (uint64_t t = 40; t <= 42; ++t) p.on_access(1, 2, t);
    return p.choose_victim(slots, kNoneProtected, 43);
  };
  LfruPolicy lfru(2, 4, 4.0);
  LfuPolicy lfu(2, 4);
  CHECK(run(lfru) == 0);  // the old heavy expert decayed: 6 uses, ~36 events old, worth ~0.01
  CHECK(run(lfu) == 1);   // plain counts keep the old expert
}

TEST_CASE("lfru decays a score by half every half-life") {
  LfruPolicy lfru(1, 2, 10.0);
  lfru.on_insert(0, 1, 0);
  lfru.on_access(0, 1, 0);
  CHECK(lfru.value(1, 0) == doctest::Approx(1.0));
  CHECK(lfru.value(1, 10) == doctest::Approx(0.5));
  CHECK(lfru.value(1, 20) == doctest::Approx(0.25));
  lfru.on_access(0, 1, 10);  // 0.5 + 1
  CHECK(lfru.value(1, 10) == doctest::Approx(1.5));
  CHECK(lfru.value(1, 20) == doctest::Approx(0.75));
}

TEST_CASE("lfru orders by value however old the scores: no underflow to a tie") {
  // Expert 1 used every event up to 12 (a score of about 6.3), expert 2 once at 13: 1 is worth
  // more at any later time, though both values underflow a double long before event 100,000.
  LfruPolicy lfru(2, 4, 4.0);
  const std::vector<uint32_t> slots = {0, 1};
  lfru.on_insert(0, 1, 1);
  for (uint64_t t = 1; t <= 12; ++t) lfru.on_access(0, 1, t);
  lfru.on_insert(1, 2, 13);
  lfru.on_access(1, 2, 13);
  CHECK(lfru.value(1, 14) > lfru.value(2, 14));
  CHECK(lfru.choose_victim(slots, kNoneProtected, 14) == 1);
  CHECK(lfru.value(1, 100000) == 0.0);  // what a comparison of values would have tied on
  CHECK(lfru.choose_victim(slots, kNoneProtected, 100000) == 1);
  // An expert inserted but never used ranks below any used one.
  LfruPolicy fresh(2, 4, 4.0);
  fresh.on_insert(0, 3, 1);
  fresh.on_insert(1, 0, 2);
  fresh.on_access(1, 0, 2);
  CHECK(fresh.choose_victim(slots, kNoneProtected, 50) == 0);
}

TEST_CASE("lfru's default half-life is four times the slot count") {
  auto p = make_policy(PolicySpec{PolicyKind::Lfru, 0.0}, 28, 256);
  CHECK(static_cast<LfruPolicy&>(*p).half_life() == doctest::Approx(112.0));
  auto q = make_policy(PolicySpec{PolicyKind::Lfru, 7.5}, 28, 256);
  CHECK(static_cast<LfruPolicy&>(*q).half_life() == doctest::Approx(7.5));
}

TEST_CASE("belady evicts the expert needed furthest in the future, never-again first") {
  BeladyPolicy b(3, 8);
  const std::vector<uint32_t> slots = {0, 1, 2};
  b.on_insert(0, 4, 1);
  b.on_insert(1, 5, 2);
  b.on_insert(2, 6, 3);
  b.set_next_use(4, 10);
  b.set_next_use(5, 30);
  b.set_next_use(6, 20);
  CHECK(b.choose_victim(slots, kNoneProtected, 4) == 1);
  b.set_next_use(4, BeladyPolicy::kNever);
  CHECK(b.choose_victim(slots, kNoneProtected, 4) == 0);
}

TEST_CASE("s3fifo lets a one-off expert leave before the hot ones, and brings a recent victim back to main") {
  // 10 slots: probation holds 1. Slots 0-8 are hot (used after insertion, then promoted), slot 9
  // holds a one-off expert.
  S3FifoPolicy policy(10, 64);
  const std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<uint8_t> none(10, 0);
  uint64_t t = 1;
  for (uint32_t s = 0; s < 10; ++s) {
    policy.on_insert(s, s, t++);
    policy.on_access(s, s, t++);  // the miss's own access: not a hit
  }
  for (uint32_t s = 0; s < 9; ++s) policy.on_access(s, s, t++);  // a real hit on each hot slot
  // Probation (10 slots, all entered there) is over its share: its oldest used slots move to main,
  // and the first unused one, the one-off expert 9, is the victim; the hot ones stay.
  CHECK(policy.choose_victim(all, none, t++) == 9);
  policy.on_evict(9, 9);
  // Expert 9 is in the ghost list: brought back, it enters main, and main's oldest unused slot
  // goes before it when main must give a slot up.
  policy.on_insert(9, 9, t++);
  policy.on_access(9, 9, t++);
  const int32_t next = policy.choose_victim(all, none, t++);
  CHECK(next >= 0);
  CHECK(next != 9);
  // Protected slots are never chosen.
  std::vector<uint8_t> mask(10, 1);
  mask[4] = 0;
  CHECK(policy.choose_victim(all, mask, t++) == 4);
}
