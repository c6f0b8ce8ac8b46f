// The pinned-async transport under load: many concurrent tickets of out-of-order ranges through a
// tiny staging ring land byte-exact (a staging buffer reused before its copy completed would
// corrupt them), demand and prefetch, host and device destinations.
#include <doctest/doctest.h>

#include <random>
#include <thread>

#include "paging_fixture.hpp"

using namespace moepage::test;

TEST_CASE("out-of-order ranges land byte-exact under load through a small staging ring") {
  CapturingHost host;
  Plugins plugins(host.get());
  constexpr uint64_t kFile = 1 << 20;
  PatternFile file(kFile);
  // 8 KiB per thread over 2 buffers: 4 KiB chunks, so most requests take several buffers.
  auto transport =
      plugins.transport("pinned-async", {{"threads", "3"}, {"staging", "8KiB"}, {"ring", "2"}, {"queue_depth", "4"}});
  const uint32_t handle = transport.open(file.path().string());

  constexpr int kSubmitters = 3, kRounds = 40, kPerTicket = 6;
  std::vector<std::thread> submitters;
  std::atomic<int> bad{0};
  for (int s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&, s] {
      std::mt19937_64 rng(100 + s);
      for (int round = 0; round < kRounds; ++round) {
        std::vector<std::vector<uint8_t>> buffers(kPerTicket);
        std::vector<mp_read_request> reqs;
        for (int i = 0; i < kPerTicket; ++i) {
          const uint64_t length = 1 + rng() % 20000;
          const uint64_t offset = rng() % (kFile - length);
          buffers[i].assign(length + 16, 0xAA);
          reqs.push_back(mp_read_request{sizeof(mp_read_request), handle, offset, length, buffers[i].data(), 16,
                                         int32_t(rng() % 2 ? MP_MEM_DEVICE : MP_MEM_HOST),
                                         int32_t(rng() % 3 == 0 ? MP_READ_PREFETCH : MP_READ_DEMAND), uint64_t(i)});
        }
        const mp_ticket t = transport.submit(reqs);
        if (round % 2 == 0) {
          if (!transport.ticket_event(t).has_value()) ++bad;
        }
        transport.wait(t);
        for (int i = 0; i < kPerTicket; ++i) {
          if (!matches_pattern(buffers[i].data() + 16, reqs[i].length, reqs[i].offset)) ++bad;
          for (int j = 0; j < 16; ++j)
            if (buffers[i][j] != 0xAA) ++bad;  // nothing written before dst_offset
        }
      }
    });
  }
  for (auto& t : submitters) t.join();
  CHECK(bad.load() == 0);
  const mp_transport_stats s = transport.stats();
  CHECK(s.requests == uint64_t(kSubmitters) * kRounds * kPerTicket);
  CHECK(s.errors == 0);
}

TEST_CASE("poll reports pending, then the result once, and a retired ticket is an error") {
  CapturingHost host;
  Plugins plugins(host.get());
  PatternFile file(1 << 16);
  auto transport = plugins.transport("pinned-async", {{"threads", "1"}, {"staging", "8KiB"}});
  const uint32_t handle = transport.open(file.path().string());
  std::vector<uint8_t> dst(40000);
  const mp_read_request r{sizeof(mp_read_request), handle, 123, dst.size(), dst.data(), 0, MP_MEM_HOST,
                          MP_READ_DEMAND,          0};
  const mp_ticket t = transport.submit({&r, 1});
  while (!transport.poll(t)) std::this_thread::yield();
  CHECK(matches_pattern(dst.data(), dst.size(), 123));
  CHECK_THROWS_WITH(transport.wait(t), doctest::Contains("unknown or already retired ticket"));
}

TEST_CASE("staging smaller than one 4 KiB buffer per ring slot is refused naming the option") {
  CapturingHost host;
  Plugins plugins(host.get());
  CHECK_THROWS_WITH(plugins.transport("pinned-async", {{"staging", "4KiB"}, {"ring", "2"}}),
                    doctest::Contains("option staging"));
}
