// The HIP device service, exercised only through the C table plugins see.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "host/device_service.hpp"
#include "host/log.hpp"
#include "stream_gate.hpp"

using moepage::test::StreamGate;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

// One service, the streams and events a test makes, and a gate. Teardown opens the gate and
// drains every stream before anything goes away, even when a check failed half-way.
struct Device {
  std::unique_ptr<moepage::host::DeviceService> service = moepage::host::make_hip_device_service();
  const mp_device_service* t = service->table();
  StreamGate gate;
  std::vector<mp_stream> streams;
  std::vector<mp_event> events;

  ~Device() {
    gate.open();
    for (mp_stream s : streams) t->stream_synchronize(t->ctx, s);
    for (mp_event e : events) t->event_destroy(t->ctx, e);
    for (mp_stream s : streams) t->stream_destroy(t->ctx, s);
  }
  mp_stream stream() { return made(t->stream_create, streams); }
  mp_event event() { return made(t->event_create, events); }

 private:
  // A stream or event from `create`, kept in `made_so_far` for the teardown.
  template <class Handle>
  Handle made(mp_status (*create)(void*, Handle*), std::vector<Handle>& made_so_far) {
    Handle h = nullptr;
    REQUIRE(create(t->ctx, &h) == MP_OK);
    REQUIRE(h != nullptr);
    made_so_far.push_back(h);
    return h;
  }
};

// Pinned or device memory released through the table on scope exit.
struct Buffer {
  const mp_device_service* t;
  bool pinned;
  void* ptr = nullptr;
  Buffer(const mp_device_service* table, bool is_pinned, uint64_t bytes) : t(table), pinned(is_pinned) {
    const mp_status s = pinned ? t->alloc_pinned(t->ctx, bytes, &ptr) : t->alloc_device(t->ctx, bytes, &ptr);
    REQUIRE(s == MP_OK);
    REQUIRE(ptr != nullptr);
  }
  ~Buffer() { pinned ? t->free_pinned(t->ctx, ptr) : t->free_device(t->ctx, ptr); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

void fill(const Buffer& b, uint64_t count, uint32_t first) {
  for (uint64_t i = 0; i < count; ++i) b.as<uint32_t>()[i] = first + static_cast<uint32_t>(i);
}

}  // namespace

TEST_CASE("the table is a complete HIP device service") {
  Device d;
  CHECK(d.t->struct_size == sizeof(mp_device_service));
  CHECK(d.t->kind == MP_DEVICE_HIP);
  CHECK(d.t->ctx != nullptr);
  // Every entry, not just a few: the core hands the table to plugins that call any of them.
  const bool all_set = d.t->alloc_device && d.t->free_device && d.t->alloc_pinned && d.t->free_pinned &&
                       d.t->stream_create && d.t->stream_destroy && d.t->stream_synchronize && d.t->event_create &&
                       d.t->event_destroy && d.t->event_record && d.t->stream_wait_event && d.t->event_query &&
                       d.t->event_synchronize && d.t->copy_to_device_async && d.t->copy_to_host && d.t->memory_info;
  CHECK(all_set);
  CHECK(d.service->last_error().empty());
}

TEST_CASE("device memory: allocate, free, zero bytes still gives a distinct pointer") {
  Device d;
  void* a = nullptr;
  void* b = nullptr;
  REQUIRE(d.t->alloc_device(d.t->ctx, 64 * kMiB, &a) == MP_OK);
  REQUIRE(d.t->alloc_device(d.t->ctx, 0, &b) == MP_OK);
  CHECK(a != nullptr);
  CHECK(b != nullptr);
  CHECK(a != b);
  CHECK(d.t->free_device(d.t->ctx, a) == MP_OK);
  CHECK(d.t->free_device(d.t->ctx, b) == MP_OK);
  CHECK(d.t->free_device(d.t->ctx, nullptr) == MP_OK);
  CHECK(d.t->alloc_device(d.t->ctx, 16, nullptr) == MP_ERR_INVALID_ARG);
}

TEST_CASE("pinned memory is host memory the CPU can write and read") {
  Device d;
  Buffer p(d.t, true, 4 * kMiB);
  std::memset(p.ptr, 0xAB, 4 * kMiB);
  CHECK(p.as<unsigned char>()[0] == 0xAB);
  CHECK(p.as<unsigned char>()[4 * kMiB - 1] == 0xAB);
  CHECK(d.t->free_pinned(d.t->ctx, nullptr) == MP_OK);
}

TEST_CASE("a copy round trip: pinned -> device on a stream, event, device -> host") {
  Device d;
  const uint64_t count = 13 * kMiB / sizeof(uint32_t);  // one expert-sized piece
  const uint64_t bytes = count * sizeof(uint32_t);
  Buffer src(d.t, true, bytes);
  Buffer dev(d.t, false, bytes);
  Buffer back(d.t, true, bytes);
  fill(src, count, 7);
  std::memset(back.ptr, 0, bytes);
  mp_stream copy = d.stream();
  mp_event done = d.event();
  REQUIRE(d.t->copy_to_device_async(d.t->ctx, dev.ptr, src.ptr, bytes, copy) == MP_OK);
  REQUIRE(d.t->event_record(d.t->ctx, done, copy) == MP_OK);
  REQUIRE(d.t->event_synchronize(d.t->ctx, done) == MP_OK);
  CHECK(d.t->event_query(d.t->ctx, done) == MP_OK);
  REQUIRE(d.t->copy_to_host(d.t->ctx, back.ptr, dev.ptr, bytes) == MP_OK);
  uint64_t mismatches = 0;
  for (uint64_t i = 0; i < count; ++i) mismatches += back.as<uint32_t>()[i] != 7 + static_cast<uint32_t>(i);
  CHECK(mismatches == 0);
}

TEST_CASE("the NULL stream is the service's compute stream: copies on it are ordered before copy_to_host") {
  Device d;
  const uint64_t count = 1 << 20;
  const uint64_t bytes = count * sizeof(uint32_t);
  Buffer src(d.t, true, bytes);
  Buffer dev(d.t, false, bytes);
  std::vector<uint32_t> back(count, 0);
  fill(src, count, 100);
  REQUIRE(d.t->copy_to_device_async(d.t->ctx, dev.ptr, src.ptr, bytes, nullptr) == MP_OK);
  // copy_to_host runs on the compute stream, so it sees the copy above without a sync in between.
  REQUIRE(d.t->copy_to_host(d.t->ctx, back.data(), dev.ptr, bytes) == MP_OK);
  CHECK(back.front() == 100);
  CHECK(back.back() == 100 + count - 1);
  CHECK(d.t->stream_synchronize(d.t->ctx, nullptr) == MP_OK);
  CHECK(d.t->stream_destroy(d.t->ctx, nullptr) == MP_OK);  // the service's own: left alone
  CHECK(d.t->copy_to_host(d.t->ctx, back.data(), dev.ptr, 4) == MP_OK);
}

TEST_CASE("event_query says pending while the stream is held, ok once it ran") {
  Device d;
  mp_stream s = d.stream();
  mp_event e = d.event();
  d.gate.close_on(s);
  REQUIRE(d.t->event_record(d.t->ctx, e, s) == MP_OK);
  CHECK(d.t->event_query(d.t->ctx, e) == MP_PENDING);
  CHECK(d.t->event_query(d.t->ctx, e) == MP_PENDING);
  // "Not ready" must not linger as the runtime's last error (a kernel-launch check would trip on it).
  CHECK(moepage::test::runtime_error_clear());
  d.gate.open();
  REQUIRE(d.t->event_synchronize(d.t->ctx, e) == MP_OK);
  CHECK(d.t->event_query(d.t->ctx, e) == MP_OK);
}

TEST_CASE("stream_wait_event orders work across two streams") {
  Device d;
  const uint64_t count = 1 << 20;
  const uint64_t bytes = count * sizeof(uint32_t);
  Buffer first(d.t, true, bytes);
  Buffer second(d.t, true, bytes);
  Buffer dev(d.t, false, bytes);
  std::vector<uint32_t> back(count, 0);
  fill(first, count, 1000);
  fill(second, count, 2000);
  mp_stream a = d.stream();
  mp_stream b = d.stream();
  mp_event a_done = d.event();
  mp_event b_done = d.event();

  // Stream a is held, then writes `first`; stream b waits for a, then writes `second`. Without
  // the wait b would finish while a is still held and a's copy would land last.
  d.gate.close_on(a);
  REQUIRE(d.t->copy_to_device_async(d.t->ctx, dev.ptr, first.ptr, bytes, a) == MP_OK);
  REQUIRE(d.t->event_record(d.t->ctx, a_done, a) == MP_OK);
  REQUIRE(d.t->stream_wait_event(d.t->ctx, b, a_done) == MP_OK);
  REQUIRE(d.t->copy_to_device_async(d.t->ctx, dev.ptr, second.ptr, bytes, b) == MP_OK);
  REQUIRE(d.t->event_record(d.t->ctx, b_done, b) == MP_OK);
  CHECK(d.t->event_query(d.t->ctx, b_done) == MP_PENDING);
  d.gate.open();
  REQUIRE(d.t->stream_synchronize(d.t->ctx, b) == MP_OK);
  CHECK(d.t->event_query(d.t->ctx, a_done) == MP_OK);
  REQUIRE(d.t->copy_to_host(d.t->ctx, back.data(), dev.ptr, bytes) == MP_OK);
  CHECK(back.front() == 2000);
  CHECK(back.back() == 2000 + count - 1);
}

TEST_CASE("a copy stream does not wait for a held compute stream") {
  // Both streams are non-blocking: a transport's copies overlap compute that is still running.
  Device d;
  mp_stream copy = d.stream();
  mp_event compute_done = d.event();
  mp_event copy_done = d.event();
  Buffer src(d.t, true, kMiB);
  Buffer dev(d.t, false, kMiB);
  mp_stream compute = d.stream();
  d.gate.close_on(compute);
  REQUIRE(d.t->event_record(d.t->ctx, compute_done, compute) == MP_OK);
  REQUIRE(d.t->copy_to_device_async(d.t->ctx, dev.ptr, src.ptr, kMiB, copy) == MP_OK);
  REQUIRE(d.t->event_record(d.t->ctx, copy_done, copy) == MP_OK);
  CHECK(d.t->event_synchronize(d.t->ctx, copy_done) == MP_OK);
  CHECK(d.t->event_query(d.t->ctx, compute_done) == MP_PENDING);
  d.gate.open();
  CHECK(d.t->event_synchronize(d.t->ctx, compute_done) == MP_OK);
}

TEST_CASE("memory_info reports the GPU's memory and sees an allocation") {
  Device d;
  uint64_t free_before = 0, total = 0;
  REQUIRE(d.t->memory_info(d.t->ctx, &free_before, &total) == MP_OK);
  CHECK(total >= (1ull << 30));
  CHECK(free_before > 0);
  CHECK(free_before <= total);
  {
    Buffer big(d.t, false, 512 * kMiB);
    uint64_t free_during = 0, total_during = 0;
    REQUIRE(d.t->memory_info(d.t->ctx, &free_during, &total_during) == MP_OK);
    CHECK(total_during == total);
    CHECK(free_during + 256 * kMiB <= free_before);
  }
  CHECK(d.t->memory_info(d.t->ctx, nullptr, &total) == MP_ERR_INVALID_ARG);
}

TEST_CASE("an absurd allocation is MP_ERR_OOM with a message, and the device still works after") {
  Device d;
  moepage::host::LogCapture logs(spdlog::level::warn);
  const uint64_t absurd = 1ull << 60;
  void* p = reinterpret_cast<void*>(uintptr_t{1});
  CHECK(d.t->alloc_device(d.t->ctx, absurd, &p) == MP_ERR_OOM);
  CHECK(p == nullptr);
  const std::string message = d.service->last_error();
  INFO("last error: " << message);
  CHECK(message.find("hipMalloc") != std::string::npos);
  CHECK(message.find(std::to_string(absurd)) != std::string::npos);
  CHECK(logs.find({"device", "hipMalloc", std::to_string(absurd)}) != "");
  CHECK(moepage::test::runtime_error_clear());
  Buffer fine(d.t, false, kMiB);
  CHECK(fine.ptr != nullptr);
}
