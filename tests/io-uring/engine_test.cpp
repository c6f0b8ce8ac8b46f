// The io-uring engine driven directly, on real rings and real files, with faults injected into
// its completions (UringTransport::set_completion_filter): short reads, EINTR, EAGAIN and I/O
// errors, one batch per io_uring_submit, and many threads at once.
#include <doctest/doctest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <map>
#include <random>
#include <thread>

#include "io_uring_fixture.hpp"

using namespace moepage::test;
using moepage::uring::Mode;
using moepage::uring::UringTransport;

namespace {

constexpr uint8_t kCanary = 0xA5;

// Random ranges of a file of `size` bytes, each in its own buffer after `pad` canary bytes.
struct Batch {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<mp_read_request> requests;
  static constexpr uint64_t kPad = 16;

  Batch(std::mt19937_64& rng, uint32_t file, uint64_t size, int n, uint64_t max_length) {
    for (int i = 0; i < n; ++i) {
      const uint64_t length = 1 + rng() % max_length;
      const uint64_t offset = rng() % (size - length);
      buffers.emplace_back(length + 2 * kPad, kCanary);
      requests.push_back(request(file, offset, length, buffers.back().data(), kPad, uint64_t(i + 1)));
    }
  }
  // The number of requests whose bytes are wrong or which wrote outside their range.
  int bad() const {
    int bad = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      const auto& b = buffers[i];
      const uint64_t n = requests[i].length;
      bool ok = matches_pattern(b.data() + kPad, n, requests[i].offset);
      for (uint64_t j = 0; j < kPad; ++j) ok = ok && b[j] == kCanary && b[kPad + n + j] == kCanary;
      bad += ok ? 0 : 1;
    }
    return bad;
  }
};

}  // namespace

TEST_CASE("one io_uring_submit hands the kernel a whole batch") {
  LogHost host;
  PatternFile file(1 << 20);
  UringTransport t(host.get(), config(64, 16, 64 * 1024, Mode::kOff));
  uint32_t f = 0;
  t.open(file.path().c_str(), &f);
  std::mt19937_64 rng(1);
  Batch batch(rng, f, 1 << 20, 40, 8000);  // 40 reads, each one window
  const uint64_t before = t.ring_submits();
  const mp_ticket ticket = submit(t, batch.requests);
  CHECK(t.ring_submits() - before == 1);
  const Outcome o = wait_for(t, ticket);
  CHECK(o.status == MP_OK);
  CHECK(batch.bad() == 0);
}

TEST_CASE("short reads are sent again for the rest, byte-exact, buffered and through staging") {
  for (const Mode direct : {Mode::kOff, Mode::kAuto}) {
    CAPTURE(int(direct));
    LogHost host;
    PatternFile file(3 << 20);
    UringTransport t(host.get(), config(8, 4, 64 * 1024, direct));
    // Every read comes back with at most a third of its bytes (in whole 4 KiB blocks when more
    // than one, so O_DIRECT reads stay aligned), so each window needs several reads.
    std::atomic<int> shortened{0};
    t.set_completion_filter([&](const UringTransport::Completion& c) {
      if (c.res <= 0 || c.length < 3 * 4096) return c.res;
      ++shortened;
      return int32_t(std::min<uint64_t>(uint64_t(c.res), c.length / 3 / 4096 * 4096));
    });
    uint32_t f = 0;
    t.open(file.path().c_str(), &f);
    std::mt19937_64 rng(2);
    Batch batch(rng, f, 3 << 20, 30, 300000);
    const Outcome o = wait_for(t, submit(t, batch.requests));
    CHECK(o.status == MP_OK);
    CHECK(o.message == "");
    CHECK(batch.bad() == 0);
    CHECK(shortened.load() > 30);
    const mp_transport_stats s = stats_of(t);
    CHECK(s.requests == 30);
    CHECK(s.errors == 0);
  }
}

TEST_CASE("EINTR and EAGAIN completions are retried until the read succeeds") {
  LogHost host;
  PatternFile file(1 << 20);
  UringTransport t(host.get(), config(16, 8, 16 * 1024));
  std::mutex m;
  std::map<uint64_t, int> attempts;  // by offset: the first two attempts of every read fail
  int injected = 0;
  t.set_completion_filter([&](const UringTransport::Completion& c) {
    std::lock_guard lock(m);
    const int n = attempts[c.offset]++;
    if (n >= 2) return c.res;
    ++injected;
    return n == 0 ? -EINTR : -EAGAIN;
  });
  uint32_t f = 0;
  t.open(file.path().c_str(), &f);
  std::mt19937_64 rng(3);
  Batch batch(rng, f, 1 << 20, 25, 50000);
  const Outcome o = wait_for(t, submit(t, batch.requests));
  CHECK(o.status == MP_OK);
  CHECK(batch.bad() == 0);
  CHECK(injected >= 50);
}

TEST_CASE("an I/O error fails its ticket naming file, offset and the request, as data, and the next read works") {
  LogHost host;
  PatternFile file(2 << 20);  // the random reads stay in the first MiB, the bad one beyond it
  UringTransport t(host.get(), config(16, 4, 8192));
  uint32_t f = 0;
  t.open(file.path().c_str(), &f);
  std::mt19937_64 rng(4);
  Batch batch(rng, f, 1 << 20, 12, 30000);
  const uint32_t bad = 7;
  batch.requests[bad].offset = 1500000;
  batch.requests[bad].length = 20000;  // three windows of 8 KiB: all of them fail
  batch.buffers[bad].assign(20000 + 2 * Batch::kPad, kCanary);
  batch.requests[bad].dst = batch.buffers[bad].data();
  t.set_completion_filter([&](const UringTransport::Completion& c) {
    return c.offset + c.length > 1500000 && c.offset < 1520000 ? -EIO : c.res;
  });
  const Outcome o = wait_for(t, submit(t, batch.requests));
  CHECK(o.status == MP_ERR_IO);
  CHECK(o.message.find(file.path().string()) != std::string::npos);
  // Every window of the request failed; whichever completed first names its offset.
  const size_t at = o.message.find("read error at offset ");
  REQUIRE(at != std::string::npos);
  const uint64_t named = std::stoull(o.message.substr(at + 21));
  CHECK(named >= 1500000);
  CHECK(named < 1520000);
  CHECK(o.message.find("(wanted ") != std::string::npos);
  CHECK(o.message.find("Input/output error") != std::string::npos);
  CHECK(o.message.find("[tag 8]") != std::string::npos);
  CHECK(o.result.failed_request == bad);
  CHECK(o.result.failed_tag == 8);
  CHECK(o.result.failed_count == 1);  // one request, however many of its windows failed
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    if (i == bad) continue;
    CHECK(matches_pattern(batch.buffers[i].data() + Batch::kPad, batch.requests[i].length, batch.requests[i].offset));
  }
  const mp_transport_stats s = stats_of(t);
  CHECK(s.errors == 1);
  CHECK(s.requests == 12);
  t.set_completion_filter(nullptr);
  Batch again(rng, f, 1 << 20, 6, 30000);
  CHECK(wait_for(t, submit(t, again.requests)).status == MP_OK);
  CHECK(again.bad() == 0);
}

TEST_CASE("a read that keeps answering EAGAIN fails after the retry limit instead of spinning") {
  LogHost host;
  PatternFile file(1 << 16);
  UringTransport t(host.get(), config(4, 2, 4096));
  t.set_completion_filter([](const UringTransport::Completion& c) { return c.offset == 8192 ? -EAGAIN : c.res; });
  uint32_t f = 0;
  t.open(file.path().c_str(), &f);
  std::vector<uint8_t> a(100), b(100);
  const Outcome o = wait_for(t, submit(t, {request(f, 0, 100, a.data()), request(f, 8192, 100, b.data(), 0, 42)}));
  CHECK(o.status == MP_ERR_IO);
  CHECK(o.message.find("offset 8192") != std::string::npos);
  CHECK(o.message.find("Resource temporarily unavailable") != std::string::npos);
  CHECK(o.result.failed_request == 1);
  CHECK(o.result.failed_tag == 42);
  CHECK(matches_pattern(a.data(), 100, 0));
}

TEST_CASE("reads past the end fail as end of file naming the requested offset, buffered and direct") {
  for (const Mode direct : {Mode::kOff, Mode::kAuto}) {
    LogHost host;
    PatternFile file(100000);  // not a multiple of any block
    UringTransport t(host.get(), config(8, 4, 16384, direct));
    uint32_t f = 0;
    t.open(file.path().c_str(), &f);
    std::vector<uint8_t> dst(300, kCanary);
    const Outcome o = wait_for(t, submit(t, {request(f, 99900, 200, dst.data(), 50)}));
    CHECK(o.status == MP_ERR_IO);
    CHECK(o.message.find(file.path().string() +
                         ": unexpected end of file at offset 99900 (wanted 200 bytes, got 100)") != std::string::npos);
    CHECK(dst[49] == kCanary);   // nothing before the destination range
    CHECK(dst[250] == kCanary);  // nor after it
    // The last bytes of the file, read up to its very end, are fine.
    std::vector<uint8_t> tail(1000);
    CHECK(wait_for(t, submit(t, {request(f, 99000, 1000, tail.data())})).status == MP_OK);
    CHECK(matches_pattern(tail.data(), 1000, 99000));
  }
}

TEST_CASE("under direct: auto a refused O_DIRECT read falls back to buffered reads once, with one info line") {
  PatternFile file(1 << 20);
  MESSAGE(probe_direct_io(file.path()).note);
  // EINVAL: a file system that opens with O_DIRECT but cannot do it; EFAULT: staging memory the
  // kernel cannot pin for direct I/O. Every O_DIRECT read fails so; buffered ones work.
  for (const int err : {EINVAL, EFAULT}) {
    CAPTURE(err);
    LogHost host;
    UringTransport t(host.get(), config(8, 4, 65536, Mode::kAuto));
    uint32_t f = 0;
    t.open(file.path().c_str(), &f);
    if (!t.file_is_direct(f)) {  // the file system refused O_DIRECT at open: plugin_test covers that fallback
      MESSAGE("the temporary folder refuses O_DIRECT at open; the refusal of a read is not tested here");
      return;
    }
    int refused = 0;
    t.set_completion_filter([&](const UringTransport::Completion& c) {
      if (!c.direct) return c.res;
      ++refused;
      return -err;
    });
    std::mt19937_64 rng(5);
    Batch batch(rng, f, 1 << 20, 10, 100000);
    const Outcome o = wait_for(t, submit(t, batch.requests));
    CHECK(o.status == MP_OK);
    CHECK(batch.bad() == 0);
    CHECK_FALSE(t.file_is_direct(f));
    CHECK(refused >= 1);
    CHECK(host.count("an O_DIRECT read of it failed (" + std::string(std::strerror(err)) + "); reading it") == 1);
    // Requests planned after the fallback read exactly their bytes: no padding lands around them.
    Batch after(rng, f, 1 << 20, 10, 100000);
    CHECK(wait_for(t, submit(t, after.requests)).status == MP_OK);
    CHECK(after.bad() == 0);

    UringTransport strict(host.get(), config(8, 4, 65536, Mode::kOn));
    strict.open(file.path().c_str(), &f);
    strict.set_completion_filter([&](const UringTransport::Completion& c) { return c.direct ? -err : c.res; });
    std::vector<uint8_t> dst(5000);
    const Outcome refused_on = wait_for(strict, submit(strict, {request(f, 100, 5000, dst.data())}));
    CHECK(refused_on.status == MP_ERR_IO);
    CHECK(refused_on.message.find(std::string(std::strerror(err)) + " (an O_DIRECT read; direct: auto falls back") !=
          std::string::npos);
  }
}

TEST_CASE("many threads submit, poll and wait at once through a small ring and few buffers, byte-exact") {
  for (const Mode direct : {Mode::kOff, Mode::kAuto}) {
    CAPTURE(int(direct));
    LogHost host;
    constexpr uint64_t kSize = 2 << 20;
    PatternFile file(kSize);
    // 3 staging buffers of 8 KiB, 4 reads in flight: most requests need several windows and wait
    // for buffers; every fourth completion comes back short.
    UringTransport t(host.get(), config(4, 3, 8192, direct));
    std::atomic<uint64_t> completions{0};
    t.set_completion_filter([&](const UringTransport::Completion& c) {
      if (c.res > 8192 / 2 && completions++ % 4 == 0 && c.length == 8192) return int32_t(4096);
      return c.res;
    });
    uint32_t f = 0;
    t.open(file.path().c_str(), &f);
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int s = 0; s < 4; ++s) {
      threads.emplace_back([&, s] {
        std::mt19937_64 rng(100 + s);
        for (int round = 0; round < 30; ++round) {
          Batch batch(rng, f, kSize, 5, 40000);
          for (auto& r : batch.requests) {
            r.priority = rng() % 3 == 0 ? MP_READ_PREFETCH : MP_READ_DEMAND;
            r.dst_kind = rng() % 2 == 0 ? MP_MEM_DEVICE : MP_MEM_HOST;  // the CPU device: host memory
          }
          const mp_ticket ticket = submit(t, batch.requests);
          if (round % 3 == 0) {
            mp_event e = nullptr;
            t.ticket_event(ticket, &e);
            if (e == nullptr) ++bad;
          }
          if (round % 2 == 0) {
            mp_ticket_result r = mp::no_failed_request();
            while (t.poll(ticket, &r) == MP_PENDING) std::this_thread::yield();
          } else if (wait_for(t, ticket).status != MP_OK) {
            ++bad;
          }
          bad += batch.bad();
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(bad.load() == 0);
    const mp_transport_stats s = stats_of(t);
    CHECK(s.requests == 4 * 30 * 5);
    CHECK(s.errors == 0);
  }
}

TEST_CASE("destroying the engine with reads in flight waits for the kernel, not for tickets") {
  LogHost host;
  PatternFile file(4 << 20);
  std::mt19937_64 rng(6);
  for (int i = 0; i < 5; ++i) {
    uint32_t f = 0;
    auto t = std::make_unique<UringTransport>(host.get(), config(8, 2, 65536));
    t->open(file.path().c_str(), &f);
    Batch batch(rng, f, 4 << 20, 40, 200000);
    submit(*t, batch.requests);
    submit(*t, batch.requests);
    t.reset();  // must neither hang nor leave the kernel writing into freed staging
  }
}
