// NcclCollective over the real NCCL library, one rank per visible GPU (rank r on device r, each
// with its own device service and stream, from its own thread as `moepage run` drives them): the
// library loads, its communicators form, and every rank's device buffer becomes the sum. On a
// machine with one GPU the group has one rank: the sum is the buffer itself, through NCCL's kernel.
//
// The library comes from MOEPAGE_TEST_NCCL_LIBRARY, which tools/device/test_env.sh sets when it
// finds NCCL (PyTorch's wheel ships one); without it the test fails and says so.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "host/device_service.hpp"
#include "parallel/local_group.hpp"
#include "parallel/nccl_collective.hpp"

namespace {

std::string nccl_library() {
  const char* path = std::getenv("MOEPAGE_TEST_NCCL_LIBRARY");
  return path ? path : "";
}

float value(uint32_t rank, uint64_t i) { return float(rank + 1) * 0.5f + float(i % 97); }

}  // namespace

TEST_CASE("NCCL sums every rank's device buffer on the ranks' own streams, one rank per GPU") {
  const std::string library = nccl_library();
  REQUIRE_MESSAGE(!library.empty(), "MOEPAGE_TEST_NCCL_LIBRARY is not set (tools/device/test_env.sh finds NCCL)");
  const int gpus = moepage::host::hip_device_count();
  REQUIRE(gpus >= 1);
  std::vector<int> devices;
  for (int d = 0; d < gpus; ++d) devices.push_back(d);
  moepage::parallel::NcclCollective nccl(library, devices);
  MESSAGE(nccl.describe());
  moepage::parallel::LocalGroup group(static_cast<uint32_t>(gpus));
  group.attach_device(&nccl);

  constexpr uint64_t n = 8192 + 5;  // 32 KiB and a ragged tail
  std::vector<std::vector<float>> result(size_t(gpus), std::vector<float>(n, -1.0f));
  std::vector<std::string> failure(static_cast<size_t>(gpus));
  std::vector<std::thread> threads;
  for (int r = 0; r < gpus; ++r)
    threads.emplace_back([&, r] {
      auto service = moepage::host::make_hip_device_service(r);
      const mp_device_service* t = service->table();
      const mp_collective& c = group.rank(uint32_t(r));
      mp_stream stream = nullptr;
      void* device = nullptr;
      void* pinned = nullptr;
      auto fail = [&](const std::string& what) {
        failure[size_t(r)] = what;
        c.abort(c.ctx, what.c_str());
      };
      if (t->stream_create(t->ctx, &stream) != MP_OK || t->alloc_device(t->ctx, n * sizeof(float), &device) != MP_OK ||
          t->alloc_pinned(t->ctx, n * sizeof(float), &pinned) != MP_OK) {
        fail("device service: " + service->last_error());
      } else {
        float* host = static_cast<float*>(pinned);
        for (uint64_t i = 0; i < n; ++i) host[i] = value(uint32_t(r), i);
        if (t->copy_to_device_async(t->ctx, device, pinned, n * sizeof(float), stream) != MP_OK)
          fail("upload: " + service->last_error());
        else if (c.all_reduce_sum_f32_device(c.ctx, static_cast<float*>(device), n, stream) != MP_OK)
          fail(std::string("all-reduce: ") + c.last_error(c.ctx));
        else if (t->stream_synchronize(t->ctx, stream) != MP_OK ||
                 t->copy_to_host(t->ctx, result[size_t(r)].data(), device, n * sizeof(float)) != MP_OK)
          fail("download: " + service->last_error());
      }
      if (stream) t->stream_synchronize(t->ctx, stream);
      if (pinned) t->free_pinned(t->ctx, pinned);
      if (device) t->free_device(t->ctx, device);
      if (stream) t->stream_destroy(t->ctx, stream);
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < gpus; ++r) {
    CAPTURE(r);
    CHECK(failure[size_t(r)] == "");
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int q = 0; q < gpus; ++q) sum += value(uint32_t(q), i);  // small integers and halves: exact
      if (result[size_t(r)][i] != sum) ++wrong;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("two ranks on one GPU are refused before the library is asked") {
  CHECK_THROWS_WITH(
      moepage::parallel::NcclCollective(nccl_library(), {0, 0}),
      ("collective library '" + nccl_library() + "' needs a GPU per rank, but ranks 0 and 1 share device 0").c_str());
}
