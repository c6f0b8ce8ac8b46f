// The CPU device service and the host API table handed to plugins.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>

#include "host/device_service.hpp"
#include "host/host_api.hpp"
#include "host/log.hpp"

using moepage::host::HostApi;

namespace {
std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("moepage-loader-test-" + name);
  std::ofstream(p) << text;
  return p;
}
}  // namespace

TEST_CASE("the host API carries the ABI version, a clock that moves forward and the CPU device") {
  HostApi host;
  const mp_host_api* api = host.get();
  CHECK(api->struct_size == sizeof(mp_host_api));
  CHECK(api->abi_major == MP_ABI_MAJOR);
  CHECK(api->abi_minor == MP_ABI_MINOR);
  const uint64_t a = api->now_ns(api->ctx);
  const uint64_t b = api->now_ns(api->ctx);
  CHECK(b >= a);
  REQUIRE(api->device != nullptr);
  CHECK(api->device->kind == MP_DEVICE_CPU);
}

TEST_CASE("a plugin's log line reaches the host logger named after the component") {
  HostApi host;
  moepage::host::LogCapture logs;
  host.get()->log(host.get()->ctx, MP_LOG_WARN, "my-pager", "slots are tight");
  host.get()->log(host.get()->ctx, MP_LOG_DEBUG, nullptr, nullptr);
  CHECK(logs.find({"warning my-pager: slots are tight"}) != "");
  CHECK(logs.find({"debug plugin: "}) != "");
}

TEST_CASE("device and pinned allocations are 64-byte aligned and copies move the bytes") {
  HostApi host;
  const mp_device_service* d = host.get()->device;
  void* dev = nullptr;
  void* pinned = nullptr;
  REQUIRE(d->alloc_device(d->ctx, 100, &dev) == MP_OK);
  REQUIRE(d->alloc_pinned(d->ctx, 0, &pinned) == MP_OK);
  CHECK(reinterpret_cast<uintptr_t>(dev) % 64 == 0);
  CHECK(reinterpret_cast<uintptr_t>(pinned) % 64 == 0);
  char src[100];
  for (int i = 0; i < 100; ++i) src[i] = static_cast<char>(i * 3);
  mp_stream s = nullptr;
  mp_event e = nullptr;
  REQUIRE(d->stream_create(d->ctx, &s) == MP_OK);
  REQUIRE(d->event_create(d->ctx, &e) == MP_OK);
  CHECK(d->copy_to_device_async(d->ctx, dev, src, 100, s) == MP_OK);
  CHECK(d->event_record(d->ctx, e, s) == MP_OK);
  CHECK(d->event_query(d->ctx, e) == MP_OK);  // CPU work is done at submission
  char back[100] = {};
  CHECK(d->copy_to_host(d->ctx, back, dev, 100) == MP_OK);
  CHECK(std::memcmp(src, back, 100) == 0);
  CHECK(d->alloc_device(d->ctx, 8, nullptr) == MP_ERR_INVALID_ARG);
  CHECK(d->event_destroy(d->ctx, e) == MP_OK);
  CHECK(d->stream_destroy(d->ctx, s) == MP_OK);
  CHECK(d->free_device(d->ctx, dev) == MP_OK);
  CHECK(d->free_pinned(d->ctx, pinned) == MP_OK);
}

TEST_CASE("memory information is read from a meminfo file in bytes") {
  const auto p = write_temp("meminfo-ok", "MemTotal:       16384 kB\nMemFree:     100 kB\nMemAvailable:    8192 kB\n");
  const auto m = moepage::host::read_meminfo(p);
  CHECK(m.total == 16384ull * 1024);
  CHECK(m.available == 8192ull * 1024);
}

TEST_CASE("an unreadable or incomplete meminfo file gives an error naming the file") {
  CHECK_THROWS_WITH(moepage::host::read_meminfo("/nonexistent/meminfo"),
                    "/nonexistent/meminfo: cannot be read, so free memory is unknown");
  const auto p = write_temp("meminfo-partial", "MemTotal: 4 kB\n");
  CHECK_THROWS_WITH(moepage::host::read_meminfo(p), (p.string() + ": no MemAvailable line").c_str());
}

TEST_CASE("the CPU device reports the machine's memory") {
  HostApi host;
  const mp_device_service* d = host.get()->device;
  uint64_t free_bytes = 0, total = 0;
  REQUIRE(d->memory_info(d->ctx, &free_bytes, &total) == MP_OK);
  CHECK(total > 0);
  CHECK(free_bytes <= total);
}

TEST_CASE("an unreadable meminfo makes memory_info fail with io and log the file") {
  HostApi host(moepage::host::make_cpu_device_service("/nonexistent/meminfo"));
  moepage::host::LogCapture logs;
  const mp_device_service* d = host.get()->device;
  uint64_t free_bytes = 0, total = 0;
  CHECK(d->memory_info(d->ctx, &free_bytes, &total) == MP_ERR_IO);
  CHECK(logs.find({"error device: /nonexistent/meminfo: cannot be read"}) != "");
}
