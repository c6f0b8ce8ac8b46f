// NcclCollective over a stand-in library (fake_nccl.cpp): the group's device entry (ABI 1.9)
// reaches the library with each rank's buffer, an abort reaches it too, and every way the
// library can be unusable is a one-line error naming it.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "parallel/local_group.hpp"
#include "parallel/nccl_collective.hpp"

using moepage::parallel::LocalGroup;
using moepage::parallel::NcclCollective;

namespace {

std::string error_of(const std::string& library, std::vector<int> devices) {
  try {
    NcclCollective c(library, std::move(devices));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a group with the library attached sums every rank's buffer through its device entry") {
  constexpr uint32_t kRanks = 3;
  NcclCollective nccl(FAKE_NCCL_PATH, {0, 1, 2});
  CHECK(nccl.describe() == std::string(FAKE_NCCL_PATH) + " 2.27.3 over devices 0,1,2");
  LocalGroup group(kRanks);
  const bool attached_before = group.rank(0).all_reduce_sum_f32_device != nullptr;
  CHECK_FALSE(attached_before);  // none until attached
  group.attach_device(&nccl);
  std::vector<std::vector<float>> data(kRanks);
  std::vector<mp_status> status(kRanks, MP_ERR_INTERNAL);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      const mp_collective& c = group.rank(r);
      REQUIRE(MP_HAS_FIELD(&c, mp_collective, all_reduce_sum_f32_device));
      data[r] = {float(r + 1), float(10 * (r + 1)), -1.0f};
      status[r] = c.all_reduce_sum_f32_device(c.ctx, data[r].data(), 3, nullptr);
    });
  for (std::thread& t : threads) t.join();
  for (uint32_t r = 0; r < kRanks; ++r) {
    CHECK(status[r] == MP_OK);
    CHECK(data[r] == std::vector<float>{6.0f, 60.0f, -3.0f});
  }
}

TEST_CASE("an abort of the group aborts the library's communicators and wakes a rank waiting in a sum") {
  NcclCollective nccl(FAKE_NCCL_PATH, {0, 1});
  LocalGroup group(2);
  group.attach_device(&nccl);
  mp_status waiting = MP_OK;
  std::string why;
  std::thread rank0([&] {
    const mp_collective& c = group.rank(0);
    float x = 1.0f;
    waiting = c.all_reduce_sum_f32_device(c.ctx, &x, 1, nullptr);
    why = c.last_error(c.ctx);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 waits for rank 1 in the library
  const mp_collective& c1 = group.rank(1);
  c1.abort(c1.ctx, "out of memory at layer 3");
  rank0.join();
  CHECK(waiting == MP_ERR_INTERNAL);
  CHECK(why.find("ncclAllReduce on rank 0 failed") != std::string::npos);
  // Later calls fail at once, with the group's reason.
  float y = 1.0f;
  CHECK(c1.all_reduce_sum_f32_device(c1.ctx, &y, 1, nullptr) == MP_ERR_INTERNAL);
  CHECK(std::string(c1.last_error(c1.ctx)) == "rank 1 failed: out of memory at layer 3");
}

TEST_CASE("a library that cannot serve is refused with one line naming it and what is wrong") {
  CHECK(error_of("/nonexistent/libnccl.so.2", {0, 1})
            .rfind("collective library '/nonexistent/libnccl.so.2' cannot be "
                   "loaded: ",
                   0) == 0);
  CHECK(error_of("libm.so.6", {0, 1}) == "collective library 'libm.so.6' has no ncclCommInitAll");
  CHECK(error_of(FAKE_NCCL_PATH, {0, 0}) == std::string("collective library '") + FAKE_NCCL_PATH +
                                                "' needs a GPU per rank, but ranks 0 and 1 share device 0");
  CHECK(error_of(FAKE_NCCL_PATH, {0, 99}) == std::string("collective library '") + FAKE_NCCL_PATH +
                                                 "': ncclCommInitAll over 2 devices failed: invalid argument (fake)");
  CHECK(moepage::parallel::default_collective_library(false) == "libnccl.so.2");
  CHECK(moepage::parallel::default_collective_library(true) == "librccl.so.1");
}
