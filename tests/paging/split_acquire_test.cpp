// The split acquire of the paged pager (ABI 1.5: acquire_start, acquire_await, acquire_finish)
// through a transport that reads nothing until asked (deferred_transport.hpp). So the test sees
// exactly which expert's bytes are in place at each step: hits at once, each miss only after its
// await, and a failed read surfacing at finish, fail closed. Prefetched experts (hint) land only
// when a request uses them: nothing else waits for their reads.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "deferred_transport.hpp"

using namespace moepage::test;

TEST_CASE("split acquire: hits are ready at once, each miss lands with its own event, finish commits") {
  SplitBench b(3);
  REQUIRE(b.pager.splits_acquire());
  acquire(b.pager, 2, {0, 1});  // plain acquire fills two of the three slots
  const mp_pager_stats before = b.pager.stats();
  const uint32_t tickets_before = g_control.tickets, reads_before = g_control.reads;

  Started s = start(b.pager, 2, {1, 4, 5});
  CHECK(s.pending == std::vector<uint8_t>{0, 1, 1});
  CHECK(g_control.tickets == tickets_before + 2);  // one ticket per missing expert
  CHECK(g_control.reads == reads_before);          // nothing has landed yet
  CHECK(b.model.slot_holds(s.slots[0], 2, 1));     // the hit is valid now
  CHECK_FALSE(b.model.slot_holds(s.slots[1], 2, 4));

  CHECK(b.pager.acquire_await(2, 1) != nullptr);  // expert 4's event; its bytes are placed
  CHECK(b.model.slot_holds(s.slots[1], 2, 4));
  CHECK_FALSE(b.model.slot_holds(s.slots[2], 2, 5));  // expert 5 still on its way
  CHECK(b.pager.acquire_await(2, 0) == nullptr);      // a hit has nothing to wait for
  CHECK(b.pager.acquire_await(2, 2) != nullptr);
  CHECK(b.model.slot_holds(s.slots[2], 2, 5));
  CHECK(g_control.events_handed == 2);
  b.pager.acquire_finish(2);

  const mp_pager_stats after = b.pager.stats();
  CHECK(after.accesses - before.accesses == 3);
  CHECK(after.hits - before.hits == 1);
  CHECK(after.misses - before.misses == 2);
  CHECK(after.bytes_read - before.bytes_read ==
        2 * (SyntheticCatalog::kPartBytes[0] + SyntheticCatalog::kPartBytes[1]));
  // Committed: the next acquire finds all three.
  Started again = start(b.pager, 2, {5, 4, 1});
  CHECK(again.pending == std::vector<uint8_t>{0, 0, 0});
  b.pager.acquire_finish(2);
  CHECK(b.pager.stats().hits - after.hits == 3);
}

TEST_CASE("split acquire: finish waits for what was never awaited") {
  SplitBench b(2);
  Started s = start(b.pager, 1, {6, 7});
  CHECK(s.pending == std::vector<uint8_t>{1, 1});
  b.pager.acquire_finish(1);
  CHECK(b.model.slot_holds(s.slots[0], 1, 6));
  CHECK(b.model.slot_holds(s.slots[1], 1, 7));
}

TEST_CASE("split acquire without ticket events: await waits for the expert and hands out no event") {
  DeferredControl control;
  control.events = false;
  SplitBench b(2, control);
  Started s = start(b.pager, 3, {2, 3});
  CHECK(b.pager.acquire_await(3, 1) == nullptr);
  CHECK(b.model.slot_holds(s.slots[1], 3, 3));
  CHECK_FALSE(b.model.slot_holds(s.slots[0], 3, 2));
  b.pager.acquire_finish(3);
  CHECK(b.model.slot_holds(s.slots[0], 3, 2));
}

TEST_CASE("split acquire over pread (no ticket_event at all) gives the bytes plain acquire gives") {
  PagingBench b;
  auto pager = b.pager_with_slots(2, "lru");
  REQUIRE(pager.splits_acquire());
  Started s;
  s.slots.assign(2, nullptr);
  s.pending.assign(2, 7);
  s.result.struct_size = sizeof s.result;
  s.result.slots = s.slots.data();
  s.result.pending = s.pending.data();
  pager.acquire_start(2, std::vector<int32_t>{3, 5}, &s.result);
  CHECK(s.pending == std::vector<uint8_t>{1, 1});
  CHECK(pager.acquire_await(2, 0) == nullptr);
  CHECK(b.model.slot_holds(s.slots[0], 2, 3));
  pager.acquire_finish(2);
  CHECK(b.model.slot_holds(s.slots[1], 2, 5));
  pager.reset();
}

TEST_CASE(
    "split acquire fails closed at finish: the error names layer, expert, part, file and offset, and the "
    "next acquire reads again") {
  SyntheticCatalog probe(4, 8, 2);
  DeferredControl control;
  control.fail_offset = probe.offset(2, 5, 1) + 10;  // layer 2, expert 5, part w2
  SplitBench b(3, control);
  const uint64_t bad = b.model.offset(2, 5, 1);
  REQUIRE(bad == probe.offset(2, 5, 1));
  acquire(b.pager, 2, {0, 1});
  Started s = start(b.pager, 2, {1, 4, 5});
  CHECK(b.pager.acquire_await(2, 2) != nullptr);  // the event comes; the verdict waits for finish
  try {
    b.pager.acquire_finish(2);
    FAIL("a failed read was not reported");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    CHECK(what.find("layer 2 expert 5 (w2)") != std::string::npos);
    CHECK(what.find(b.model.file_path) != std::string::npos);
    CHECK(what.find("offset " + std::to_string(bad)) != std::string::npos);
  }
  // Nothing of the failed fill was trusted: both misses are read again (the failure is gone now).
  g_control.fail_offset = 0;
  const mp_pager_stats before = b.pager.stats();
  Started retry = start(b.pager, 2, {1, 4, 5});
  CHECK(retry.pending == std::vector<uint8_t>{0, 1, 1});
  b.pager.acquire_finish(2);
  CHECK(b.pager.stats().misses - before.misses == 2);
  CHECK(b.model.slot_holds(retry.slots[1], 2, 4));
  CHECK(b.model.slot_holds(retry.slots[2], 2, 5));
}

TEST_CASE("split acquire keeps its rules: one started acquire per layer, no token in between") {
  SplitBench b(3);
  const std::vector<int32_t> experts{1, 2};
  Started s = start(b.pager, 2, experts);
  CHECK_THROWS_WITH(start(b.pager, 2, experts), doctest::Contains("not finished yet"));
  CHECK_THROWS_WITH(acquire(b.pager, 2, experts), doctest::Contains("not finished yet"));
  CHECK_THROWS_WITH(b.pager.begin_token(7), doctest::Contains("not finished"));
  CHECK_THROWS_WITH(b.pager.acquire_await(2, 2), doctest::Contains("index 2"));
  CHECK_THROWS_WITH(b.pager.acquire_finish(3), doctest::Contains("no started acquire"));
  acquire(b.pager, 3, experts);              // other layers are served meanwhile
  b.pager.hint(2, std::vector<int32_t>{6});  // and hints taken
  b.pager.acquire_finish(2);
  CHECK_THROWS_WITH(b.pager.acquire_finish(2), doctest::Contains("no started acquire"));
  b.pager.begin_token(8);
  // A 1.4 caller's result has no room for pending: refused, nothing started.
  std::vector<void*> slots(2);
  mp_acquire_result old{};
  old.struct_size = offsetof(mp_acquire_result, pending);
  old.slots = slots.data();
  CHECK_THROWS_WITH(b.pager.acquire_start(1, experts, &old), doctest::Contains("pending"));
  CHECK_THROWS_WITH(b.pager.acquire_finish(1), doctest::Contains("no started acquire"));
  // ... while plain acquire still takes it.
  b.pager.acquire(1, experts, &old);
  CHECK(b.model.slot_holds(slots[0], 1, 1));
  // Destroyed with an acquire started: its reads are drained, its slots never trusted.
  start(b.pager, 1, {3, 4});
}

TEST_CASE("split acquire evicts exactly what plain acquire evicts (the simulator's replay stays true)") {
  struct Row {
    uint32_t layer, expert;
    uint8_t hit;
    bool operator==(const Row&) const = default;
  };
  const mp_trace_fn record = [](void* ctx, const mp_trace_event* e) {
    static_cast<std::vector<Row>*>(ctx)->push_back(Row{e->layer, e->expert, e->hit});
  };
  const std::vector<std::vector<int32_t>> steps{{0, 1}, {2, 3}, {1, 4}, {5, 0}, {4, 1}, {6, 7}, {7, 2}, {3, 1}};
  std::vector<Row> plain_rows, split_rows;
  for (const bool split : {false, true}) {
    SplitBench b(3, {}, "lru");
    std::vector<Row>& rows = split ? split_rows : plain_rows;
    b.pager.set_trace(record, &rows);
    uint64_t token = 0;
    for (const auto& experts : steps) {
      b.pager.begin_token(token++);
      for (uint32_t layer = 1; layer < 4; ++layer) {
        if (!split) {
          acquire(b.pager, layer, experts);
          continue;
        }
        Started s = start(b.pager, layer, experts);
        b.pager.acquire_finish(layer);
        for (size_t i = 0; i < experts.size(); ++i) CHECK(b.model.slot_holds(s.slots[i], layer, uint32_t(experts[i])));
      }
    }
    b.pager.set_trace(nullptr, nullptr);
  }
  CHECK(plain_rows.size() == steps.size() * 3 * 2);
  CHECK(split_rows == plain_rows);
}

TEST_CASE("the resident pager's split acquire has nothing pending and nothing to finish") {
  PagingBench b;
  auto pager = b.plugins.pager("resident", {}, b.model.catalog, b.transport);
  REQUIRE(pager.splits_acquire());
  Started s = start(pager, 2, {3, 1});
  CHECK(s.pending == std::vector<uint8_t>{0, 0});
  CHECK(b.model.slot_holds(s.slots[0], 2, 3));
  CHECK(pager.acquire_await(2, 1) == nullptr);
  CHECK_THROWS_WITH(pager.acquire_await(2, 2), doctest::Contains("index 2"));
  CHECK_THROWS_WITH(start(pager, 2, {0}), doctest::Contains("not finished yet"));
  CHECK_THROWS_WITH(acquire(pager, 2, {0}), doctest::Contains("not finished yet"));
  pager.acquire_finish(2);
  CHECK_THROWS_WITH(pager.acquire_finish(2), doctest::Contains("no started acquire"));
  pager.reset();
}

TEST_CASE("a pager vtable of ABI 1.4 does not split its acquire; one with only some of the calls does not either") {
  mp_pager_vtable v{};
  v.struct_size = offsetof(mp_pager_vtable, acquire_start);
  CHECK_FALSE(mp_pager_splits_acquire(&v));
  v.struct_size = sizeof v;
  v.acquire_start = [](void*, uint32_t, const int32_t*, uint32_t, mp_acquire_result*) -> mp_status { return MP_OK; };
  v.acquire_finish = [](void*, uint32_t) -> mp_status { return MP_OK; };
  CHECK_FALSE(mp_pager_splits_acquire(&v));  // no acquire_await
  v.acquire_await = [](void*, uint32_t, uint32_t, mp_event*) -> mp_status { return MP_OK; };
  CHECK(mp_pager_splits_acquire(&v));
}

TEST_CASE("prefetched experts land only when a request uses them, each on its own ticket") {
  SplitBench b(4);
  b.pager.begin_token(1);
  const uint32_t tickets_before = g_control.tickets;
  b.pager.hint(1, std::vector<int32_t>{4, 5});
  CHECK(g_control.tickets == tickets_before + 2);  // one ticket per prefetched expert
  const uint32_t reads_before = g_control.reads;
  Started s = start(b.pager, 1, {4, 6});
  CHECK(s.pending == std::vector<uint8_t>{1, 1});  // 4: its prefetch read may still be landing; 6: a miss
  CHECK(g_control.reads == reads_before);          // nothing waited for the prefetches
  CHECK(b.pager.acquire_await(1, 0) != nullptr);   // expert 4's prefetch ticket's event
  CHECK(b.model.slot_holds(s.slots[0], 1, 4));
  b.pager.acquire_finish(1);
  CHECK(b.model.slot_holds(s.slots[1], 1, 6));
  CHECK(g_control.reads == reads_before + 2 * 2);  // experts 4 and 6, two parts each; never 5
  const mp_pager_stats st = b.pager.stats();
  CHECK(st.prefetch_issued == 2);
  CHECK(st.prefetch_used == 1);
  // Plain acquire waits for the one prefetch it uses, too.
  b.pager.begin_token(2);
  b.pager.hint(2, std::vector<int32_t>{1, 2, 3});
  const uint32_t reads_plain = g_control.reads;
  const Acquired a = acquire(b.pager, 2, {2});
  CHECK(b.model.slot_holds(a.slots[0], 2, 2));
  CHECK(g_control.reads == reads_plain + 2);
  // A later token settles the reads its predecessors left (expert 5's, never used) before it
  // plans: so the transport's tickets in flight stay bounded by one token's hints. Expert 5 is a
  // hit then, with nothing pending.
  b.pager.begin_token(3);
  const uint32_t reads_later = g_control.reads;
  Started later = start(b.pager, 1, {5});
  CHECK(g_control.reads == reads_later + 2);
  CHECK(later.pending == std::vector<uint8_t>{0});
  b.pager.acquire_finish(1);
  CHECK(b.model.slot_holds(later.slots[0], 1, 5));
  CHECK(b.pager.stats().hits == st.hits + 2);  // 2 (plain) and 5
}

TEST_CASE("a miss that evicts a prefetched expert still landing waits for its read before reading into the slot") {
  SplitBench b(2);
  b.pager.begin_token(1);
  acquire(b.pager, 3, {0});
  b.pager.begin_token(2);
  b.pager.hint(3, std::vector<int32_t>{7});  // the second slot, read still in flight
  b.pager.begin_token(3);
  const uint32_t reads_before = g_control.reads;
  const Acquired a = acquire(b.pager, 3, {0, 6});  // 0 hits, 6 evicts 7 (the only other slot)
  CHECK(g_control.reads == reads_before + 2 * 2);  // 7 landed first, then 6 over it
  CHECK(b.model.slot_holds(a.slots[1], 3, 6));
}

TEST_CASE("a prefetch read that fails is advice lost when unused, and fails closed when a request used it") {
  SyntheticCatalog probe(4, 8, 2);
  DeferredControl control;
  control.fail_offset = probe.offset(1, 5, 0) + 3;  // layer 1, expert 5, part w1
  SplitBench b(4, control);
  b.pager.begin_token(1);
  b.pager.hint(1, std::vector<int32_t>{5});
  // Used through plain acquire: read again at once; that read fails too, so the acquire fails naming it.
  CHECK_THROWS_WITH(acquire(b.pager, 1, {5}), doctest::Contains("layer 1 expert 5"));
  g_control.fail_offset = 0;
  const Acquired again = acquire(b.pager, 1, {5});  // dropped from the bookkeeping: a miss, read again
  CHECK(b.model.slot_holds(again.slots[0], 1, 5));
  // Used through the split acquire with an event handed out: finish fails closed, and the next
  // request reads the expert again.
  g_control.fail_offset = probe.offset(1, 6, 1) + 1;
  b.pager.begin_token(2);
  b.pager.hint(1, std::vector<int32_t>{6});
  Started s = start(b.pager, 1, {6});
  CHECK(s.pending == std::vector<uint8_t>{1});
  CHECK(b.pager.acquire_await(1, 0) != nullptr);
  CHECK_THROWS_WITH(b.pager.acquire_finish(1), doctest::Contains("layer 1 expert 6 (w2)"));
  g_control.fail_offset = 0;
  const mp_pager_stats before = b.pager.stats();
  Started retry = start(b.pager, 1, {6});
  b.pager.acquire_finish(1);
  CHECK(b.pager.stats().misses == before.misses + 1);
  CHECK(b.model.slot_holds(retry.slots[0], 1, 6));
}
