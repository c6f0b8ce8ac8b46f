// Scheduling tests: a host whose device copies block on a gate the test opens, so a reader thread
// can be held mid-request and the queue behind it observed deterministically.
#include <doctest/doctest.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "pread_fixture.hpp"

using moepage::test::matches_pattern;
using moepage::test::PreadOnFile;
using moepage::test::read_request;

namespace {

// A device service whose copies record their destination and wait until the gate opens.
struct GatedDevice {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int copies_started = 0;
  std::vector<void*> copy_order;
  int stream_token = 0;

  mp_device_service table{};
  mp_host_api host{};

  GatedDevice() {
    table.struct_size = sizeof table;
    table.kind = MP_DEVICE_CPU;
    table.ctx = this;
    table.alloc_pinned = [](void*, uint64_t bytes, void** out) -> mp_status {
      *out = std::malloc(bytes);
      return *out ? MP_OK : MP_ERR_OOM;
    };
    table.free_pinned = [](void*, void* p) -> mp_status {
      std::free(p);
      return MP_OK;
    };
    table.stream_create = [](void* ctx, mp_stream* out) -> mp_status {
      *out = reinterpret_cast<mp_stream>(&static_cast<GatedDevice*>(ctx)->stream_token);
      return MP_OK;
    };
    table.stream_destroy = [](void*, mp_stream) -> mp_status { return MP_OK; };
    table.stream_synchronize = [](void*, mp_stream) -> mp_status { return MP_OK; };
    table.copy_to_device_async = [](void* ctx, void* dst, const void* src, uint64_t bytes, mp_stream) -> mp_status {
      auto* self = static_cast<GatedDevice*>(ctx);
      std::unique_lock lock(self->mutex);
      self->copy_order.push_back(dst);
      ++self->copies_started;
      self->changed.notify_all();
      self->changed.wait(lock, [self] { return self->open; });
      std::memcpy(dst, src, bytes);
      return MP_OK;
    };
    // No log and no clock: the plugin must cope with a host that offers neither.
    host.struct_size = sizeof host;
    host.abi_major = MP_ABI_MAJOR;
    host.abi_minor = MP_ABI_MINOR;
    host.device = &table;
  }

  void wait_for_copies(int n) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return copies_started >= n; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

}  // namespace

TEST_CASE("poll returns pending while a ticket's reads are in flight, then the result") {
  GatedDevice device;
  PreadOnFile pread(64 * 1024, {{"threads", "1"}}, &device.host);
  std::vector<uint8_t> held(4096), queued(4096);

  const mp_read_request first = read_request(pread.handle, 0, 4096, held.data(), 0, MP_READ_DEMAND, MP_MEM_DEVICE);
  const mp_ticket a = pread.transport.submit({&first, 1});
  device.wait_for_copies(1);  // the only reader is now stuck in a's copy
  const mp_read_request second = read_request(pread.handle, 8192, 4096, queued.data(), 0);
  const mp_ticket b = pread.transport.submit({&second, 1});

  CHECK_FALSE(pread.transport.poll(a));
  CHECK_FALSE(pread.transport.poll(b));
  device.release();
  pread.transport.wait(b);
  pread.transport.wait(a);
  CHECK(matches_pattern(held.data(), 4096, 0));
  CHECK(matches_pattern(queued.data(), 4096, 8192));
}

TEST_CASE("queued demand reads run before queued prefetch reads") {
  GatedDevice device;
  PreadOnFile pread(64 * 1024, {{"threads", "1"}}, &device.host);
  std::vector<uint8_t> blocker(4096), prefetch1(4096), prefetch2(4096), demand(4096);

  const mp_read_request hold = read_request(pread.handle, 0, 4096, blocker.data(), 0, MP_READ_DEMAND, MP_MEM_DEVICE);
  const mp_ticket t0 = pread.transport.submit({&hold, 1});
  device.wait_for_copies(1);
  // Submitted prefetch first, demand last; one batch mixes both.
  const mp_read_request p1 =
      read_request(pread.handle, 4096, 4096, prefetch1.data(), 0, MP_READ_PREFETCH, MP_MEM_DEVICE);
  const mp_ticket t1 = pread.transport.submit({&p1, 1});
  const mp_read_request mixed[] = {
      read_request(pread.handle, 8192, 4096, prefetch2.data(), 0, MP_READ_PREFETCH, MP_MEM_DEVICE),
      read_request(pread.handle, 12288, 4096, demand.data(), 0, MP_READ_DEMAND, MP_MEM_DEVICE),
  };
  const mp_ticket t2 = pread.transport.submit(mixed);
  device.release();
  pread.transport.wait(t0);
  pread.transport.wait(t1);
  pread.transport.wait(t2);

  REQUIRE(device.copy_order.size() == 4);
  CHECK(device.copy_order[0] == blocker.data());
  CHECK(device.copy_order[1] == demand.data());
  CHECK(device.copy_order[2] == prefetch1.data());
  CHECK(device.copy_order[3] == prefetch2.data());
  CHECK(matches_pattern(demand.data(), 4096, 12288));
}

TEST_CASE("destroying a transport with reads still queued does not hang or crash") {
  GatedDevice device;
  std::vector<uint8_t> a(4096), b(4096);
  {
    PreadOnFile pread(64 * 1024, {{"threads", "1"}}, &device.host);
    const mp_read_request hold = read_request(pread.handle, 0, 4096, a.data(), 0, MP_READ_DEMAND, MP_MEM_DEVICE);
    pread.transport.submit({&hold, 1});
    device.wait_for_copies(1);
    const mp_read_request queued = read_request(pread.handle, 0, 4096, b.data(), 0);
    pread.transport.submit({&queued, 1});
    device.release();  // the held copy finishes; the queued read may be dropped
  }
  CHECK(device.copies_started == 1);
}
