// Transport checks of instances and statistics: repeated create/destroy, destroy with work in
// flight or unreported, and stats that count and keep to the caller's struct_size.
#include <chrono>
#include <cstring>
#include <thread>

#include "conform/transport_fixture.hpp"

namespace moepage::conform {
namespace {

void create_destroy(TransportContext& ctx) {
  for (int i = 0; i < 20; ++i) {
    mp::TransportHandle t = ctx.make();
    t.open(ctx.path);
  }
}

void stats_count(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  const mp_transport_stats before = t.stats();
  std::vector<Read> reads = ctx.reads(10, 50000);
  uint64_t bytes = 0;
  for (const Read& r : reads) bytes += r.length;
  t.wait(submit(t, reads, f));
  const mp_transport_stats after = t.stats();
  expect(after.struct_size == sizeof(mp_transport_stats), "stats() changed struct_size");
  expect(after.requests - before.requests == reads.size(), "stats.requests grew by " +
                                                               std::to_string(after.requests - before.requests) +
                                                               " for " + std::to_string(reads.size()) + " requests");
  expect(after.bytes_read - before.bytes_read >= bytes, "stats.bytes_read grew by " +
                                                            std::to_string(after.bytes_read - before.bytes_read) +
                                                            " for " + std::to_string(bytes) + " bytes requested");
  expect(after.errors == before.errors, "stats.errors grew without a failed read");
}

// An output struct from an older caller (smaller struct_size) gets nothing past it; struct_size 0
// is refused, nothing written (host_api.h).
void stats_struct_size(TransportContext& ctx) {
  mp::TransportHandle t = ctx.make();
  struct Guarded {
    mp_transport_stats s;
    uint64_t sentinel;
  } old{};
  constexpr uint64_t kPattern = 0x5A5A5A5A5A5A5A5Aull;
  std::memset(&old, 0x5A, sizeof old);
  old.s.struct_size = static_cast<uint32_t>(offsetof(mp_transport_stats, errors));
  mp_status s = ctx.vtable().stats(t.ref().self, &old.s);
  expect(s == MP_OK, "stats() with a smaller struct_size failed: " + std::string(mp_status_name(s)));
  uint64_t errors_field;
  std::memcpy(&errors_field, reinterpret_cast<const char*>(&old.s) + offsetof(mp_transport_stats, errors),
              sizeof errors_field);
  expect(errors_field == kPattern && old.sentinel == kPattern, "stats() wrote beyond the caller's struct_size");
  expect(old.s.struct_size == offsetof(mp_transport_stats, errors), "stats() changed the caller's struct_size");
  if (ctx.component.abi_minor < 4) return;  // what 0 means was written down in 1.4
  std::memset(&old, 0x5A, sizeof old);
  old.s.struct_size = 0;
  s = ctx.vtable().stats(t.ref().self, &old.s);
  expect(s == MP_ERR_INVALID_ARG, "stats() with struct_size 0 returned " + std::string(mp_status_name(s)) +
                                      ", expected invalid-arg (0 never means the full size)");
  const auto* bytes = reinterpret_cast<const unsigned char*>(&old);
  for (size_t i = sizeof(uint32_t); i < sizeof old; ++i)
    expect(bytes[i] == 0x5A, "stats() with struct_size 0 wrote byte " + std::to_string(i));
}

void destroy_in_flight(TransportContext& ctx) {
  std::vector<Read> reads = ctx.reads(64, 64 * 1024);  // outlive the instance, as the ABI asks
  for (int i = 0; i < 5; ++i) {
    uint32_t f = 0;
    mp::TransportHandle t = ctx.make_open(f);
    submit(t, reads, f);
    t.reset();
  }
}

void destroy_unreported(TransportContext& ctx) {
  std::vector<Read> first = ctx.reads(4, 4096), second = ctx.reads(4, 4096);
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  submit(t, first, f);
  submit(t, second, f);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  t.reset();
}

}  // namespace

std::vector<TransportCheck> transport_lifetime_checks() {
  return {
      {"creating and destroying an instance 20 times works every time", &create_destroy},
      {"stats count requests and bytes", &stats_count},
      {"stats write nothing past an older caller's struct_size (and, since 1.4, refuse struct_size 0)",
       &stats_struct_size},
      {"destroying an instance with reads still in flight neither crashes nor hangs", &destroy_in_flight},
      {"destroying an instance with completed tickets nobody waited for works", &destroy_unreported},
  };
}

}  // namespace moepage::conform
