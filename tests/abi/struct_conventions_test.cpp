// The struct_size conventions of host_api.h as the SDK's C helpers and C++ wrappers implement
// them: output structs written inside the caller's size only (0 refused, nothing written), input
// structs read with the fields the sender lacks zeroed, arrays walked with their own stride.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "moepage/cpp/structs.hpp"

TEST_CASE("mp_write_struct writes inside the caller's struct_size only and never changes it") {
  mp_transport_stats full{};
  full.struct_size = sizeof full;
  full.requests = 1;
  full.bytes_read = 2;
  full.errors = 6;
  struct {
    mp_transport_stats s;
    uint64_t after;
  } out;
  std::memset(&out, 0xAB, sizeof out);
  out.s.struct_size = offsetof(mp_transport_stats, read_ns);
  CHECK(mp_write_struct(&out.s, &full, sizeof full) == MP_OK);
  CHECK(out.s.struct_size == offsetof(mp_transport_stats, read_ns));
  CHECK(out.s.requests == 1);
  CHECK(out.s.bytes_read == 2);
  CHECK(out.s.read_ns == 0xABABABABABABABABull);
  CHECK(out.after == 0xABABABABABABABABull);
  out.s.struct_size = sizeof(mp_transport_stats) + 8;  // a newer caller: everything this side has
  CHECK(mp_write_struct(&out.s, &full, sizeof full) == MP_OK);
  CHECK(out.s.errors == 6);
  CHECK(out.after == 0xABABABABABABABABull);  // beyond what this side knows: untouched
}

TEST_CASE("struct_size 0 (or less than the size field) is invalid-arg and nothing is written") {
  mp_pager_layer_stats full{sizeof(mp_pager_layer_stats), 1, 2, 3};
  for (uint32_t size : {0u, 3u}) {
    mp_pager_layer_stats out;
    std::memset(&out, 0xAB, sizeof out);
    out.struct_size = size;
    CHECK(mp_write_struct(&out, &full, sizeof full) == MP_ERR_INVALID_ARG);
    CHECK(out.struct_size == size);
    CHECK(out.accesses == 0xABABABABABABABABull);
  }
  CHECK(mp_write_struct(nullptr, &full, sizeof full) == MP_ERR_INVALID_ARG);
  mp_pager_layer_stats zero{};
  CHECK_THROWS_WITH_AS(mp::write_out(&zero, full, "layer_stats"), doctest::Contains("struct_size (0)"), mp::Error);
}

TEST_CASE("mp_read_struct zero-fills what an older sender lacks and refuses one older than the minimum") {
  struct {
    mp_pager_create_args args;
  } old;
  std::memset(&old, 0xAB, sizeof old);
  old.args.struct_size = offsetof(mp_pager_create_args, dense_bytes);  // a sender without dense_bytes
  mp_pager_create_args full;
  CHECK(mp_read_struct(&full, sizeof full, &old.args, offsetof(mp_pager_create_args, transport)) == MP_OK);
  CHECK(full.struct_size == sizeof full);
  CHECK(full.dense_bytes == 0);
  CHECK(mp_read_struct(&full, sizeof full, &old.args, sizeof full) == MP_ERR_INVALID_ARG);
  CHECK(full.host == nullptr);  // refused: all zero
  CHECK(mp_read_struct(&full, sizeof full, nullptr, 0) == MP_ERR_INVALID_ARG);
}

TEST_CASE("a versioned array is walked with its first element's struct_size and each element checked") {
  struct Wider {
    mp_expert_segment s;
    uint64_t newer;
  };
  std::vector<Wider> wide(3);
  for (uint32_t i = 0; i < 3; ++i) wide[i] = Wider{{sizeof(Wider), i, 100u * i, 7}, 0xFFFF};
  const mp::VersionedArray<mp_expert_segment> a(&wide[0].s, 3, "segments");
  CHECK(a.stride() == sizeof(Wider));
  CHECK(a[2].offset == 200);
  CHECK(a[2].struct_size == sizeof(mp_expert_segment));  // normalised to this SDK's layout
  wide[1].s.struct_size = sizeof(mp_expert_segment);
  CHECK_THROWS_WITH_AS(
      mp::VersionedArray<mp_expert_segment>(&wide[0].s, 3, "segments"),
      "segments: element 1: struct_size 24 differs from the first element's 32 (the stride of the array)", mp::Error);
  mp_expert_segment tiny{8, 0, 0, 0};
  CHECK_THROWS_AS(mp::VersionedArray<mp_expert_segment>(&tiny, 1, "segments"), mp::Error);
  CHECK(mp::VersionedArray<mp_expert_segment>(nullptr, 0, "segments").size() == 0);
}
