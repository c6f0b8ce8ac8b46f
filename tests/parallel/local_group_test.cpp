// LocalGroup: the all-reduce gives every rank the same bits, the rank-order sum; an abort wakes
// every waiting rank with the first reason; a rank reducing another length is refused.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "parallel/local_group.hpp"

using moepage::parallel::LocalGroup;

namespace {

// Values whose float sum depends on the order they are added in.
float value(uint32_t rank, uint64_t i) {
  return (rank % 2 ? 1e8f : 1.0f) * float(1 + (i * 7 + uint64_t(rank) * 13) % 11) / 3.0f;
}

}  // namespace

TEST_CASE("every rank gets the rank-order sum, bit for bit, over repeated reduces of several lengths") {
  constexpr uint32_t kRanks = 3;
  LocalGroup group(kRanks);
  std::vector<std::vector<float>> data(kRanks);
  std::vector<std::thread> threads;
  std::vector<mp_status> status(kRanks, MP_OK);
  for (uint32_t r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      const mp_collective& c = group.rank(r);
      CHECK(c.rank == r);
      CHECK(c.size == kRanks);
      for (uint64_t n : {1ull, 2ull, 7ull, 100ull}) {
        data[r].assign(n, 0.0f);
        for (uint64_t i = 0; i < n; ++i) data[r][i] = value(r, i);
        if (const mp_status s = c.all_reduce_sum_f32(c.ctx, data[r].data(), n); s != MP_OK) status[r] = s;
      }
    });
  for (std::thread& t : threads) t.join();
  for (uint32_t r = 0; r < kRanks; ++r) {
    CHECK(status[r] == MP_OK);
    for (uint64_t i = 0; i < 100; ++i) {
      float sum = value(0, i);
      for (uint32_t q = 1; q < kRanks; ++q) sum += value(q, i);
      CHECK(std::bit_cast<uint32_t>(data[r][i]) == std::bit_cast<uint32_t>(sum));  // the same bits
    }
  }
}

TEST_CASE("an abort fails the ranks waiting in the collective and every later call, with the first reason") {
  LocalGroup group(3);
  std::vector<mp_status> status(2, MP_OK);
  std::vector<std::string> why(2);
  std::vector<std::thread> waiting;
  for (uint32_t r = 0; r < 2; ++r)
    waiting.emplace_back([&, r] {
      const mp_collective& c = group.rank(r);
      float x = 1.0f;
      status[r] = c.all_reduce_sum_f32(c.ctx, &x, 1);
      why[r] = c.last_error(c.ctx);
    });
  const mp_collective& failing = group.rank(2);
  failing.abort(failing.ctx, "layer 3: a read failed");
  failing.abort(failing.ctx, "a later reason");
  for (std::thread& t : waiting) t.join();
  for (uint32_t r = 0; r < 2; ++r) {
    CHECK(status[r] == MP_ERR_INTERNAL);
    CHECK(why[r] == "rank 2 failed: layer 3: a read failed");
  }
  float x = 0;
  CHECK(failing.all_reduce_sum_f32(failing.ctx, &x, 1) == MP_ERR_INTERNAL);
  CHECK(group.aborted());
}

TEST_CASE("ranks that reduce different lengths are refused; 0 ranks is an error") {
  LocalGroup group(2);
  std::vector<mp_status> status(2, MP_OK);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      const mp_collective& c = group.rank(r);
      std::vector<float> x(4, 1.0f);
      status[r] = c.all_reduce_sum_f32(c.ctx, x.data(), r == 0 ? 4 : 3);
    });
  for (std::thread& t : threads) t.join();
  CHECK(status[0] == MP_ERR_INVALID_ARG);
  CHECK(status[1] == MP_ERR_INVALID_ARG);
  CHECK(group.abort_reason() == "all_reduce_sum_f32: rank 1 reduces 3 floats, rank 0 4");
  CHECK_THROWS_AS(LocalGroup(0), std::invalid_argument);
  CHECK_THROWS_AS(group.rank(2), std::out_of_range);
}
