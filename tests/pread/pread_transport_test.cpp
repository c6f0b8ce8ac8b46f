#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pread_fixture.hpp"

using moepage::test::matches_pattern;
using moepage::test::pattern_byte;
using moepage::test::PatternFile;
using moepage::test::PreadOnFile;
using moepage::test::PreadPlugin;
using moepage::test::read_request;

namespace {

constexpr uint8_t kCanary = 0xA5;

struct Range {
  uint64_t offset;
  uint64_t length;
  uint64_t dst_offset;
};

// True when dst holds the file's bytes for every range and the canary everywhere else.
bool holds_exactly(const std::vector<uint8_t>& dst, const std::vector<Range>& ranges) {
  std::vector<uint8_t> expected(dst.size(), kCanary);
  for (const Range& r : ranges) {
    for (uint64_t i = 0; i < r.length; ++i) expected[r.dst_offset + i] = pattern_byte(r.offset + i);
  }
  return dst == expected;
}

std::string error_of(auto&& call) {
  try {
    call();
  } catch (const mp::PluginError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the pread plugin declares its options") {
  PreadPlugin plugin;
  const mp_component_descriptor& d = plugin.descriptor();
  REQUIRE(d.n_options == 2);
  CHECK(std::string(d.options[0].name) == "threads");
  CHECK(d.options[0].type == MP_OPT_INT);
  CHECK(std::string(d.options[0].default_value) == "4");
  CHECK(std::string(d.options[1].name) == "chunk");
  CHECK(d.options[1].type == MP_OPT_SIZE);
  CHECK(std::string(d.options[1].default_value) == "4MiB");
}

TEST_CASE("out-of-order and overlapping ranges land byte-exact at their destination offsets") {
  const uint64_t size = 3 * 1024 * 1024 + 123;  // not a multiple of the chunk size
  PreadOnFile pread(size, {{"threads", "3"}, {"chunk", "64KiB"}});

  const std::vector<Range> ranges{
      {size - 300000, 300000, 7},       // the tail, several chunks
      {0, 100, 400000},                 // the head
      {1000, 200000, 500000},           // overlaps the next one in the file
      {150000, 65536 * 3 + 1, 800000},  // chunk-aligned length plus one
      {size - 1, 1, 1100000},           // the last byte alone
      {2 * 1024 * 1024, 0, 1100100},    // nothing at all
  };
  std::vector<uint8_t> dst(1200000, kCanary);
  std::vector<mp_read_request> requests;
  for (const Range& r : ranges)
    requests.push_back(read_request(pread.handle, r.offset, r.length, dst.data(), r.dst_offset));
  const mp_ticket ticket = pread.transport.submit(requests);
  CHECK(ticket != 0);
  pread.transport.wait(ticket);
  CHECK(holds_exactly(dst, ranges));

  const mp_transport_stats stats = pread.transport.stats();
  CHECK(stats.requests == ranges.size());
  uint64_t total = 0;
  for (const Range& r : ranges) total += r.length;
  CHECK(stats.bytes_read == total);
  CHECK(stats.errors == 0);
}

TEST_CASE("opening the same file twice gives the same handle and a missing file names the path") {
  PatternFile file(4096);
  PreadPlugin plugin;
  auto transport = plugin.create({});
  CHECK(transport.open(file.path().string()) == transport.open(file.path().string()));
  const std::string missing = (file.path().parent_path() / "no-such-file.bin").string();
  const std::string message = error_of([&] { transport.open(missing); });
  CHECK(message.find("pread: cannot open " + missing + ": No such file or directory") != std::string::npos);
}

TEST_CASE("many concurrent tickets from several threads all complete byte-exact") {
  const uint64_t size = 1024 * 1024;
  PreadOnFile pread(size, {{"threads", "4"}, {"chunk", "4KiB"}});

  constexpr int kThreads = 4;
  constexpr int kTicketsPerThread = 32;
  constexpr int kRangesPerTicket = 3;
  struct Submitted {
    mp_ticket ticket = 0;
    std::vector<uint8_t> dst;
    std::vector<Range> ranges;
  };
  std::vector<std::vector<Submitted>> per_thread(kThreads);
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
      for (int k = 0; k < kTicketsPerThread; ++k) {
        Submitted s;
        uint64_t dst_size = 0;
        for (int r = 0; r < kRangesPerTicket; ++r) {
          const uint64_t length = rng() % 20000;
          const uint64_t offset = rng() % (size - length);
          s.ranges.push_back({offset, length, dst_size + 16});
          dst_size += length + 32;
        }
        s.dst.assign(dst_size, kCanary);
        std::vector<mp_read_request> requests;
        for (const Range& r : s.ranges) {
          requests.push_back(read_request(pread.handle, r.offset, r.length, s.dst.data(), r.dst_offset,
                                          k % 2 ? MP_READ_PREFETCH : MP_READ_DEMAND));
        }
        s.ticket = pread.transport.submit(requests);
        per_thread[t].push_back(std::move(s));
      }
    });
  }
  for (auto& t : submitters) t.join();

  // Wait in the reverse order of submission: completion order must not matter.
  std::vector<mp_ticket> seen;
  for (int t = kThreads - 1; t >= 0; --t) {
    for (auto it = per_thread[t].rbegin(); it != per_thread[t].rend(); ++it) {
      pread.transport.wait(it->ticket);
      CHECK(holds_exactly(it->dst, it->ranges));
      seen.push_back(it->ticket);
    }
  }
  std::sort(seen.begin(), seen.end());
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());  // every ticket distinct
  CHECK(pread.transport.stats().requests == uint64_t{kThreads} * kTicketsPerThread * kRangesPerTicket);
}

TEST_CASE("a file truncated under the transport gives an error naming file, offset and length") {
  const uint64_t size = 256 * 1024;
  PreadOnFile pread(size, {{"threads", "2"}, {"chunk", "64KiB"}});
  const uint64_t truncated = 100000;
  std::filesystem::resize_file(pread.file.path(), truncated);

  std::vector<uint8_t> dst(8192, kCanary);
  const uint64_t offset = truncated - 100;
  const mp_read_request request =
      read_request(pread.handle, offset, 4096, dst.data(), 0, MP_READ_DEMAND, MP_MEM_HOST, 42);
  const mp_ticket ticket = pread.transport.submit({&request, 1});
  const std::string message = error_of([&] { pread.transport.wait(ticket); });
  CHECK(message.find("(io)") != std::string::npos);
  CHECK(message.find("pread: " + pread.file.path().string() + ": unexpected end of file at offset " +
                     std::to_string(offset) + " (wanted 4096 bytes, got 100) [tag 42]") != std::string::npos);
  CHECK(pread.transport.stats().errors == 1);

  // The failure is not sticky: the bytes that still exist read fine afterwards.
  const mp_read_request ok = read_request(pread.handle, 0, 1000, dst.data(), 0);
  pread.transport.wait(pread.transport.submit({&ok, 1}));
  CHECK(matches_pattern(dst.data(), 1000, 0));
}

TEST_CASE("poll reports the result once and the ticket is then retired") {
  PreadOnFile pread(64 * 1024, {{"threads", "1"}});
  std::vector<uint8_t> dst(4096);
  const mp_read_request request = read_request(pread.handle, 4096, 4096, dst.data(), 0);
  const mp_ticket ticket = pread.transport.submit({&request, 1});
  while (!pread.transport.poll(ticket)) std::this_thread::yield();
  CHECK(matches_pattern(dst.data(), 4096, 4096));
  CHECK(error_of([&] { pread.transport.wait(ticket); }).find("unknown ticket") != std::string::npos);
  CHECK(error_of([&] { pread.transport.poll(ticket); }).find("unknown ticket") != std::string::npos);
  CHECK(error_of([&] { pread.transport.wait(12345); }).find("unknown ticket 12345") != std::string::npos);
}

TEST_CASE("an empty batch completes at once") {
  PreadPlugin plugin;
  auto transport = plugin.create({});
  const mp_ticket ticket = transport.submit({});
  CHECK(transport.poll(ticket));
}

TEST_CASE("bad requests are refused at submit with the request named") {
  PreadOnFile pread(4096, {});
  std::vector<uint8_t> dst(16);
  mp_read_request bad_file = read_request(pread.handle + 7, 0, 16, dst.data(), 0);
  CHECK(error_of([&] {
          pread.transport.submit({&bad_file, 1});
        }).find("request 0: unknown file handle") != std::string::npos);
  mp_read_request null_dst = read_request(pread.handle, 0, 16, nullptr, 0);
  CHECK(error_of([&] { pread.transport.submit({&null_dst, 1}); }).find("request 0: dst is NULL") != std::string::npos);
  mp_read_request overflow = read_request(pread.handle, UINT64_MAX - 4, 16, dst.data(), 0);
  CHECK(error_of([&] { pread.transport.submit({&overflow, 1}); }).find("overflows") != std::string::npos);
  mp_read_request bad_priority = read_request(pread.handle, 0, 16, dst.data(), 0, 9);
  CHECK(error_of([&] { pread.transport.submit({&bad_priority, 1}); }).find("unknown priority 9") != std::string::npos);
}

TEST_CASE("out-of-range options are refused when the transport is created") {
  PreadPlugin plugin;
  std::string message;
  try {
    plugin.create({{"threads", "0"}});
  } catch (const mp::PluginError& e) {
    message = e.what();
  }
  CHECK(message.find("pread: option threads = 0: expected 1 to 256") != std::string::npos);
  try {
    plugin.create({{"chunk", "100"}});
    message.clear();
  } catch (const mp::PluginError& e) {
    message = e.what();
  }
  CHECK(message.find("option chunk = 100 bytes") != std::string::npos);
}

TEST_CASE("device destinations go through the host's device copies") {
  const uint64_t size = 300 * 1024;
  PreadOnFile pread(size, {{"threads", "2"}, {"chunk", "64KiB"}});
  const mp_device_service* device = pread.plugin.host()->device;
  void* dst = nullptr;
  REQUIRE(device->alloc_device(device->ctx, size, &dst) == MP_OK);
  const mp_read_request request = read_request(pread.handle, 0, size, dst, 0, MP_READ_DEMAND, MP_MEM_DEVICE);
  pread.transport.wait(pread.transport.submit({&request, 1}));
  std::vector<uint8_t> back(size);
  REQUIRE(device->copy_to_host(device->ctx, back.data(), dst, size) == MP_OK);
  CHECK(matches_pattern(back.data(), size, 0));
  device->free_device(device->ctx, dst);
}

TEST_CASE("a directory is refused at open, naming it") {
  PreadPlugin plugin;
  auto transport = plugin.create({});
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK(error_of([&] { transport.open(dir); }).find("pread: cannot read " + dir + ": it is a directory") !=
        std::string::npos);
}
