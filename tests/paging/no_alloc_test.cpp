// Nothing allocated after load: once warm, the lru pager's acquire path and its split acquire (hits, misses with reads
// through pread or io-uring, hints) makes no heap allocation. alloc_counter.cpp (shared with pager-core's
// tests) replaces operator new in this binary; the plugins' calls resolve to it too.
#include <doctest/doctest.h>

#include "alloc_counter.hpp"
#include "paging_fixture.hpp"

using namespace moepage::test;

namespace {

void check_warm_path_allocates_nothing(PagingBench& bench) {
  auto pager = bench.pager_with_slots(3);
  {
    // Proof the counter sees allocations made inside the plugin: a refused call through the raw
    // vtable allocates only there (its error message), so 0 below really means none.
    const mp_pager_ref raw = pager.ref();
    const int32_t expert = 0;
    void* slot = nullptr;
    mp_acquire_result r{sizeof(mp_acquire_result), &slot, nullptr, 0, nullptr};
    AllocationScope refused;
    REQUIRE(raw.vtable->acquire(raw.self, 0, &expert, 1, &r) == MP_ERR_INVALID_ARG);
    REQUIRE(refused.count() > 0);
  }
  std::vector<void*> slots(2);
  mp_acquire_result result{sizeof(mp_acquire_result), slots.data(), nullptr, 0, nullptr};
  const int32_t requests[4][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  const int32_t hints[4][1] = {{2}, {4}, {6}, {0}};
  auto step = [&](uint64_t token) {
    pager.begin_token(token);
    for (uint32_t layer = 1; layer < 4; ++layer) {
      pager.acquire(layer, requests[token % 4], &result);
      pager.hint(layer, hints[token % 4]);
    }
  };
  for (uint64_t t = 0; t < 8; ++t) step(t);  // warm-up: the transport's rings reach their size
  const uint64_t misses = pager.stats().misses;
  AllocationScope scope;
  for (uint64_t t = 8; t < 40; ++t) step(t);
  CHECK(scope.count() == 0);
  CHECK(pager.stats().misses > misses);  // the measured steps really read
  CHECK(bench.model.slot_holds(slots[1], 3, 7));
}

}  // namespace

TEST_CASE("once warm, acquire and hint allocate nothing, with misses and reads through pread") {
  PagingBench bench;
  check_warm_path_allocates_nothing(bench);
}

TEST_CASE("once warm, acquire and hint allocate nothing, with misses and reads through io-uring") {
  // O_DIRECT where the temporary folder takes it: the expert parts are unaligned, so staged.
  PagingBench direct("io-uring", OptionList{{"buffers", "2"}, {"buffer_size", "4KiB"}});
  check_warm_path_allocates_nothing(direct);
  PagingBench buffered("io-uring", OptionList{{"direct", "off"}});
  check_warm_path_allocates_nothing(buffered);
}

TEST_CASE("once warm, the split acquire (start, await, finish) allocates nothing, with misses and reads") {
  PagingBench bench;
  auto pager = bench.pager_with_slots(3);
  std::vector<void*> slots(2);
  std::vector<uint8_t> pending(2);
  mp_acquire_result result{sizeof(mp_acquire_result), slots.data(), nullptr, 0, pending.data()};
  const int32_t requests[4][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  const int32_t hints[4][1] = {{2}, {4}, {6}, {0}};
  uint64_t awaited = 0;
  auto step = [&](uint64_t token) {
    pager.begin_token(token);
    for (uint32_t layer = 1; layer < 4; ++layer) {
      pager.acquire_start(layer, requests[token % 4], &result);
      for (uint32_t i = 0; i < 2; ++i)
        if (pending[i]) {
          pager.acquire_await(layer, i);
          ++awaited;
        }
      pager.hint(layer, hints[token % 4]);
      pager.acquire_finish(layer);
    }
  };
  for (uint64_t t = 0; t < 8; ++t) step(t);
  const uint64_t awaited_before = awaited;
  AllocationScope scope;
  for (uint64_t t = 8; t < 40; ++t) step(t);
  CHECK(scope.count() == 0);
  CHECK(awaited > awaited_before);  // the measured steps really read
  CHECK(bench.model.slot_holds(slots[1], 3, 7));
}
