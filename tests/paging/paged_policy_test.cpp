// The `paged` pager's name and policy: `lru` is the same pager under its former name (same hits
// and misses on the same accesses), and pager.policy really changes which expert a miss evicts.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "paging_fixture.hpp"

using namespace moepage::test;

namespace {

// Misses of one access pattern on layer 1 with three slots, one expert per token: expert 0 is used
// four times, then 1, 2 and 3 arrive. lru then evicts 0 (least recent) and misses it again; lfu
// keeps 0 (most used) and evicts one of the experts used once.
uint64_t misses_of(const std::string& pager_name, const std::string& policy) {
  PagingBench bench;
  auto pager = bench.pager_with_slots(3, pager_name, {{"policy", policy}});
  uint64_t token = 0;
  for (int32_t e : {0, 0, 0, 0, 1, 2, 3, 0}) {
    pager.begin_token(token++);
    auto got = acquire(pager, 1, {e});
    REQUIRE(bench.model.slot_holds(got.slots[0], 1, uint32_t(e)));
  }
  return pager.stats().misses;
}

}  // namespace

TEST_CASE("the lru alias pages exactly like paged with policy lru") {
  for (const char* policy : {"lru", "lfu", "lfru"}) {
    CAPTURE(policy);
    CHECK(misses_of("lru", policy) == misses_of("paged", policy));
  }
}

TEST_CASE("pager.policy changes what a miss evicts") {
  CHECK(misses_of("paged", "lru") == 5);  // 0, 1, 2, 3, then 0 again
  CHECK(misses_of("paged", "lfu") == 4);  // 0 stayed
}

TEST_CASE("an unknown policy is a create error naming the option and the choices") {
  PagingBench bench;
  const std::string what =
      bench.pager_refusal("paged", {{"budget", std::to_string(bench.model.budget_for(3))}, {"policy", "fifo"}});
  CHECK(what.find("policy") != std::string::npos);
  CHECK(what.find("lfru") != std::string::npos);
}
