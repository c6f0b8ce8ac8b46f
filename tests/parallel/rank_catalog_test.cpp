// The partition, a rank's catalog (only its experts, renumbered) and the pager ref that turns the
// architecture's global ids into the rank's: acquires of other ranks' experts are refused naming
// the owner, hints lose them, trace events come back in global ids.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "parallel/expert_partition.hpp"
#include "parallel/rank_pager.hpp"

using moepage::parallel::ExpertPartition;
using moepage::parallel::RankCatalog;
using moepage::parallel::RankPagerRef;

namespace {

constexpr uint32_t kLayers = 2, kExperts = 5, kParts = 2;

// A catalog whose segment (layer, expert, part) has offset 1000 * layer + 10 * expert + part.
struct FakeCatalog {
  std::vector<mp_expert_segment> segments;
  uint64_t part_offset[kParts] = {0, 64};
  uint64_t part_bytes[kParts] = {64, 32};
  mp_expert_catalog abi{};
  FakeCatalog() {
    for (uint32_t l = 0; l < kLayers; ++l)
      for (uint32_t e = 0; e < kExperts; ++e)
        for (uint32_t p = 0; p < kParts; ++p)
          segments.push_back(mp_expert_segment{sizeof(mp_expert_segment), 0, 1000ull * l + 10ull * e + p, 8});
    abi.struct_size = sizeof abi;
    abi.n_layers = kLayers;
    abi.n_experts = kExperts;
    abi.n_parts = kParts;
    abi.top_k = 3;
    abi.expert_bytes = 96;
    abi.part_offset = part_offset;
    abi.part_bytes = part_bytes;
    abi.segments = segments.data();
  }
};

// A pager that records what it was asked.
struct FakePager {
  std::vector<int32_t> acquired, hinted;
  mp_trace_fn trace = nullptr;
  void* trace_ctx = nullptr;
  mp_pager_vtable vtable{};
  FakePager() {
    vtable.struct_size = offsetof(mp_pager_vtable, acquire_start);  // a 1.4 pager: no split acquire
    vtable.last_error = [](void*) { return "the pager's own error"; };
    vtable.begin_token = [](void*, uint64_t) { return mp_status(MP_OK); };
    vtable.acquire = [](void* self, uint32_t, const int32_t* e, uint32_t n, mp_acquire_result*) {
      static_cast<FakePager*>(self)->acquired.assign(e, e + n);
      return mp_status(MP_OK);
    };
    vtable.hint = [](void* self, uint32_t, const int32_t* e, uint32_t n) {
      static_cast<FakePager*>(self)->hinted.assign(e, e + n);
      return mp_status(MP_OK);
    };
    vtable.stats = [](void*, mp_pager_stats*) { return mp_status(MP_OK); };
    vtable.layer_stats = [](void*, uint32_t, mp_pager_layer_stats*) { return mp_status(MP_OK); };
    vtable.set_trace = [](void* self, mp_trace_fn fn, void* ctx) {
      static_cast<FakePager*>(self)->trace = fn;
      static_cast<FakePager*>(self)->trace_ctx = ctx;
      return mp_status(MP_OK);
    };
  }
  mp_pager_ref ref() { return mp_pager_ref{sizeof(mp_pager_ref), &vtable, this}; }
};

}  // namespace

TEST_CASE("round-robin gives expert e to rank e mod N; 0 ranks and more ranks than experts are refused") {
  const ExpertPartition p = ExpertPartition::round_robin(kLayers, kExperts, 2, "parallel.ranks");
  CHECK(p.owner(0, 0) == 0);
  CHECK(p.owner(1, 3) == 1);
  CHECK(p.owner(1, 4) == 0);
  CHECK_THROWS_WITH(ExpertPartition::round_robin(kLayers, kExperts, 0, "parallel.ranks (--ranks 0)"),
                    "parallel.ranks (--ranks 0): 0 ranks; give 1 or more");
  CHECK_THROWS_WITH(ExpertPartition::round_robin(kLayers, kExperts, 6, "parallel.ranks"),
                    doctest::Contains("6 ranks but the model has 5 routed experts per layer"));
}

TEST_CASE("a rank's catalog holds its experts only, renumbered in ascending global id") {
  FakeCatalog full;
  const ExpertPartition p = ExpertPartition::round_robin(kLayers, kExperts, 2, "parallel.ranks");
  const RankCatalog one(full.abi, p, 1);  // experts 1 and 3
  const mp_expert_catalog& c = one.abi();
  CHECK(c.n_experts == 2);
  CHECK(c.top_k == 2);  // a token uses at most the rank's experts
  CHECK(c.n_layers == kLayers);
  CHECK(c.part_offset == full.part_offset);
  CHECK(c.segments[(1 * 2 + 1) * kParts + 1].offset == 1000 + 30 + 1);  // layer 1, local 1 = expert 3, part 1
  CHECK(one.local(0, 3) == 1);
  CHECK(one.local(0, 2) == -1);
  CHECK(one.local(0, 99) == -1);
  CHECK(one.global(1, 0) == 1);
  const RankCatalog zero(full.abi, p, 0);  // experts 0, 2, 4
  CHECK(zero.abi().n_experts == 3);
  CHECK(zero.abi().top_k == 3);
}

TEST_CASE("the rank's pager ref translates acquires, refuses other ranks' experts, filters hints, maps traces") {
  FakeCatalog full;
  const ExpertPartition p = ExpertPartition::round_robin(kLayers, kExperts, 2, "parallel.ranks");
  const RankCatalog cat(full.abi, p, 1);
  FakePager pager;
  RankPagerRef wrapper(pager.ref(), cat, p);
  const mp_pager_ref ref = wrapper.ref();
  CHECK_FALSE(mp_pager_splits_acquire(ref.vtable));  // what the pager lacks stays absent
  CHECK(!ref.vtable->destroy);

  const int32_t mine[] = {3, 1};
  mp_acquire_result out{};
  CHECK(ref.vtable->acquire(ref.self, 0, mine, 2, &out) == MP_OK);
  CHECK(pager.acquired == std::vector<int32_t>{1, 0});

  const int32_t theirs[] = {3, 2};
  CHECK(ref.vtable->acquire(ref.self, 1, theirs, 2, &out) == MP_ERR_INVALID_ARG);
  CHECK(std::string(ref.vtable->last_error(ref.self)) == "rank 1: layer 1 expert 2 belongs to rank 0");
  CHECK(ref.vtable->begin_token(ref.self, 0) == MP_OK);
  CHECK(std::string(ref.vtable->last_error(ref.self)) == "the pager's own error");

  const int32_t hint[] = {0, 1, 2, 3, 4};
  CHECK(ref.vtable->hint(ref.self, 0, hint, 5) == MP_OK);
  CHECK(pager.hinted == std::vector<int32_t>{0, 1});

  std::vector<mp_trace_event> seen;
  auto record = [](void* ctx, const mp_trace_event* e) {
    static_cast<std::vector<mp_trace_event>*>(ctx)->push_back(*e);
  };
  CHECK(ref.vtable->set_trace(ref.self, record, &seen) == MP_OK);
  mp_trace_event event{};
  event.struct_size = sizeof event;
  event.layer = 1;
  event.expert = 1;  // the rank's expert 1 = global 3
  pager.trace(pager.trace_ctx, &event);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].expert == 3);
  CHECK(seen[0].layer == 1);
}

TEST_CASE("the rank's pager ref never offers fixed slots: a rank numbers its experts locally") {
  FakeCatalog full;
  const ExpertPartition p = ExpertPartition::round_robin(kLayers, kExperts, 2, "parallel.ranks");
  const RankCatalog cat(full.abi, p, 0);
  FakePager pager;
  pager.vtable.struct_size = sizeof(mp_pager_vtable);  // a 1.8 pager that offers them
  pager.vtable.fixed_slots = [](void*, uint32_t, void**, uint32_t) { return mp_status(MP_OK); };
  REQUIRE(mp_pager_offers_fixed_slots(pager.ref().vtable));
  RankPagerRef wrapper(pager.ref(), cat, p);
  CHECK_FALSE(mp_pager_offers_fixed_slots(wrapper.ref().vtable));
}
