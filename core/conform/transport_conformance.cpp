// Conformance checks for transport components. Every read lands between guard bytes, so a
// transport that writes outside its destination range fails as surely as one that reads wrong bytes.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "conform/conformance.hpp"
#include "conform/sample_file.hpp"
#include "moepage/cpp/host_handles.hpp"

namespace moepage::conform {
namespace {

constexpr uint8_t kGuard = 0xA5;
constexpr uint64_t kGuardBytes = 64;
// Not a multiple of any block size, and larger than common bounce buffers (1 MiB) and chunks.
constexpr uint64_t kFileBytes = (uint64_t{5} << 20) + 1234;

// One read and the buffer it lands in: [guard][dst_offset filler][data][guard].
struct Read {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t dst_offset = 0;
  std::vector<uint8_t> buffer;

  Read(uint64_t off, uint64_t len, uint64_t dst_off) : offset(off), length(len), dst_offset(dst_off) {
    buffer.assign(dst_offset + length + kGuardBytes, kGuard);
  }
  mp_read_request request(uint32_t file, int32_t priority = MP_READ_DEMAND, int32_t kind = MP_MEM_HOST) {
    mp_read_request r{};
    r.struct_size = sizeof r;
    r.file = file;
    r.offset = offset;
    r.length = length;
    r.dst = buffer.data();
    r.dst_offset = dst_offset;
    r.dst_kind = kind;
    r.priority = priority;
    r.tag = offset + 1;
    return r;
  }
  // Byte-exact data, untouched guard bytes before and after.
  void verify(const SampleFile& file, const std::string& what) const {
    for (uint64_t i = 0; i < dst_offset; ++i) {
      expect(buffer[i] == kGuard, what + ": byte " + std::to_string(i) + " before dst_offset was overwritten");
    }
    const int64_t bad = file.first_mismatch(offset, buffer.data() + dst_offset, length);
    expect(bad < 0, what + ": " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                        " differ from the file first at byte " + std::to_string(bad));
    for (uint64_t i = dst_offset + length; i < buffer.size(); ++i) {
      expect(buffer[i] == kGuard, what + ": a byte after the destination range was overwritten");
    }
  }
};

mp::TransportHandle make(const Component& c, const mp_host_api* host, const ConformConfig& config) {
  profile::ResolvedOptions options = resolve_options(*c.descriptor, config);
  return mp::TransportHandle::create(*c.descriptor, c.library, host, options.c_options());
}

mp_ticket submit(mp::TransportHandle& t, std::vector<Read>& reads, uint32_t file, int32_t priority = MP_READ_DEMAND) {
  std::vector<mp_read_request> requests;
  for (Read& r : reads) requests.push_back(r.request(file, priority));
  return t.submit(requests);
}

std::vector<Read> random_reads(std::mt19937_64& rng, size_t count, uint64_t max_length) {
  std::vector<Read> reads;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t length = 1 + rng() % max_length;
    const uint64_t offset = rng() % (kFileBytes - length + 1);
    reads.emplace_back(offset, length, rng() % 17);
  }
  return reads;
}

void verify_all(const std::vector<Read>& reads, const SampleFile& file, const std::string& what) {
  for (size_t i = 0; i < reads.size(); ++i) reads[i].verify(file, what + " read " + std::to_string(i));
}

}  // namespace

void run_transport_checks(const Component& c, const mp_host_api* host, const ConformConfig& config, Checklist& list) {
  const mp_component_descriptor& d = *c.descriptor;
  run_option_checks(c, config, list);

  if (!list.run("the vtable has every required function", [&] {
        const mp_transport_vtable* v = d.transport;
        expect(v != nullptr, "the descriptor has no transport vtable");
        expect(v->struct_size >= offsetof(mp_transport_vtable, ticket_event),
               "vtable struct_size " + std::to_string(v->struct_size) + " is smaller than ABI v1's");
        expect(v->create && v->destroy && v->last_error && v->open && v->submit && v->wait && v->poll && v->stats,
               "a required function is NULL");
      })) {
    return;
  }

  // Components that declare themselves unfinished fail here with their own message.
  if (!creation_check(list, "creates an instance with its options", [&] { make(c, host, config); })) return;

  std::unique_ptr<SampleFile> sample;
  if (!list.run("a sample file is generated for the checks", [&] {
        sample = std::make_unique<SampleFile>(kFileBytes, config.seed, config.scratch);
      })) {
    return;
  }
  const SampleFile& file = *sample;
  const std::string path = file.path().string();
  std::mt19937_64 rng(config.seed);

  list.run("creating and destroying an instance 20 times works every time", [&] {
    for (int i = 0; i < 20; ++i) {
      mp::TransportHandle t = make(c, host, config);
      t.open(path);
    }
  });

  list.run("opening a missing file fails with a status and a message naming the file", [&] {
    mp::TransportHandle t = make(c, host, config);
    const std::string missing = (file.folder() / "no-such-file.safetensors").string();
    const mp::PluginError e = expect_failure([&] { t.open(missing); }, "opening " + missing);
    expect(std::string(e.what()).find(missing) != std::string::npos, "the message does not name the file: " + std::string(e.what()));
  });

  list.run("random ranges in one batch are byte-exact and stay inside their destination", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    std::vector<Read> reads = random_reads(rng, 64, 96 * 1024);
    reads.emplace_back(4097, (uint64_t{3} << 20) / 2 + 3, 5);  // crosses several 1 MiB windows and chunks
    t.wait(submit(t, reads, f));
    verify_all(reads, file, "batch");
  });

  list.run("prefetch-priority reads are byte-exact", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    std::vector<Read> reads = random_reads(rng, 16, 64 * 1024);
    t.wait(submit(t, reads, f, MP_READ_PREFETCH));
    verify_all(reads, file, "prefetch");
  });

  list.run("tickets waited for in reverse order of submission are each byte-exact", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    std::vector<std::vector<Read>> batches;
    std::vector<mp_ticket> tickets;
    for (int i = 0; i < 8; ++i) batches.push_back(random_reads(rng, 4, 128 * 1024));
    for (auto& b : batches) tickets.push_back(submit(t, b, f));
    for (size_t i = tickets.size(); i-- > 0;) t.wait(tickets[i]);
    for (const auto& b : batches) verify_all(b, file, "reverse-order");
  });

  list.run("four threads submitting and waiting at once all get byte-exact data", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    std::vector<std::string> errors(4);
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w) {
      threads.emplace_back([&, w] {
        try {
          std::mt19937_64 local(config.seed * 31 + static_cast<uint64_t>(w));
          for (int round = 0; round < 12; ++round) {
            std::vector<Read> reads = random_reads(local, 4, 32 * 1024);
            t.wait(submit(t, reads, f));
            verify_all(reads, file, "thread " + std::to_string(w));
          }
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(w)] = e.what();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (const std::string& e : errors) expect(e.empty(), e);
  });

  list.run("overlapping ranges in one batch are each byte-exact", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    std::vector<Read> reads;
    for (uint64_t i = 0; i < 8; ++i) reads.emplace_back(100000 + i * 777, 20000, i);
    reads.emplace_back(100000, 20000, 0);  // the same range twice
    t.wait(submit(t, reads, f));
    verify_all(reads, file, "overlapping");
  });

  list.run("zero-length requests and an empty batch complete with ok", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    std::vector<Read> reads;
    reads.emplace_back(10, 0, 3);
    reads.emplace_back(kFileBytes, 0, 0);  // zero bytes at the very end is still inside the file
    t.wait(submit(t, reads, f));
    verify_all(reads, file, "zero-length");
    t.wait(t.submit({}));
  });

  list.run("the first byte, the last byte, the whole file and a range ending at the end are exact", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    std::vector<Read> reads;
    reads.emplace_back(0, 1, 1);
    reads.emplace_back(kFileBytes - 1, 1, 2);
    reads.emplace_back(0, kFileBytes, 0);
    reads.emplace_back(kFileBytes - 5000, 5000, 7);
    t.wait(submit(t, reads, f));
    verify_all(reads, file, "boundary");
  });

  list.run("reading past the end of the file fails naming the file, and the next read works", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    const mp_transport_stats before = t.stats();
    for (const uint64_t start : {kFileBytes - 100, kFileBytes + 4096}) {
      std::vector<Read> reads;
      reads.emplace_back(start, 200, 0);
      const mp::PluginError e = expect_failure([&] { t.wait(submit(t, reads, f)); },
                                               "a read at offset " + std::to_string(start) + " past the end");
      expect(e.status() != MP_OK && e.status() != MP_PENDING, "the failure has status " + std::string(mp_status_name(e.status())));
      expect(std::string(e.what()).find(path) != std::string::npos, "the message does not name the file: " + std::string(e.what()));
    }
    const mp_transport_stats after = t.stats();
    expect(after.errors >= before.errors + 2, "stats.errors grew by " + std::to_string(after.errors - before.errors) +
                                                  " after two failed reads");
    std::vector<Read> reads = random_reads(rng, 4, 4096);
    t.wait(submit(t, reads, f));
    verify_all(reads, file, "after a failure");
  });

  list.run("a request with an unknown file handle is refused at submit", [&] {
    mp::TransportHandle t = make(c, host, config);
    t.open(path);
    std::vector<Read> reads;
    reads.emplace_back(0, 16, 0);
    const mp::PluginError e = expect_failure([&] { submit(t, reads, 9999); }, "a request for file handle 9999");
    expect(e.status() == MP_ERR_INVALID_ARG, "status " + std::string(mp_status_name(e.status())) + ", expected invalid-arg");
  });

  list.run("poll reports pending or ok until done; ticket 0 is an error, not a hang", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    std::vector<Read> reads = random_reads(rng, 8, 256 * 1024);
    const mp_ticket ticket = submit(t, reads, f);
    expect(ticket != 0, "submit returned ticket 0, which is never valid");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!t.poll(ticket)) {
      expect(std::chrono::steady_clock::now() < deadline, "poll still reports pending after 20 s");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    verify_all(reads, file, "polled");
    expect_failure([&] { t.wait(0); }, "wait(0)");
    expect_failure([&] { t.poll(0); }, "poll(0)");
  });

  list.run("stats count requests and bytes, and respect an older caller's struct_size", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    const mp_transport_stats before = t.stats();
    std::vector<Read> reads = random_reads(rng, 10, 50000);
    uint64_t bytes = 0;
    for (const Read& r : reads) bytes += r.length;
    t.wait(submit(t, reads, f));
    const mp_transport_stats after = t.stats();
    expect(after.struct_size == sizeof(mp_transport_stats), "stats() changed struct_size");
    expect(after.requests - before.requests == reads.size(),
           "stats.requests grew by " + std::to_string(after.requests - before.requests) + " for " +
               std::to_string(reads.size()) + " requests");
    expect(after.bytes_read - before.bytes_read >= bytes,
           "stats.bytes_read grew by " + std::to_string(after.bytes_read - before.bytes_read) + " for " +
               std::to_string(bytes) + " bytes requested");
    expect(after.errors == before.errors, "stats.errors grew without a failed read");
    // A caller built against a v1 struct that ended before `errors` must not see it written.
    struct OldStats {
      mp_transport_stats s;
      uint64_t sentinel;
    } old{};
    std::memset(&old, 0x5A, sizeof old);
    old.s.struct_size = static_cast<uint32_t>(offsetof(mp_transport_stats, errors));
    const mp_status s = d.transport->stats(t.ref().self, &old.s);
    expect(s == MP_OK, "stats() with a smaller struct_size failed: " + std::string(mp_status_name(s)));
    uint64_t errors_field;
    std::memcpy(&errors_field, reinterpret_cast<const char*>(&old.s) + offsetof(mp_transport_stats, errors), sizeof errors_field);
    expect(errors_field == 0x5A5A5A5A5A5A5A5Aull && old.sentinel == 0x5A5A5A5A5A5A5A5Aull,
           "stats() wrote beyond the caller's struct_size");
  });

  list.run("device destinations through the host's device service are byte-exact (or refused as unsupported)", [&] {
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    const mp_device_service* dev = host->device;
    void* device = nullptr;
    const uint64_t bytes = 300000;
    expect(dev != nullptr && dev->alloc_device(dev->ctx, bytes, &device) == MP_OK, "the host cannot allocate device memory");
    std::vector<uint8_t> back(bytes);
    try {
      mp_read_request r{};
      r.struct_size = sizeof r;
      r.file = f;
      r.offset = 12345;
      r.length = bytes;
      r.dst = device;
      r.dst_kind = MP_MEM_DEVICE;
      r.priority = MP_READ_DEMAND;
      mp_ticket ticket = 0;
      const mp_status s = d.transport->submit(t.ref().self, &r, 1, &ticket);
      if (s == MP_ERR_UNSUPPORTED) {
        dev->free_device(dev->ctx, device);
        return;
      }
      expect(s == MP_OK, "submit to a device destination failed: " + std::string(d.transport->last_error(t.ref().self)));
      t.wait(ticket);
      expect(dev->copy_to_host(dev->ctx, back.data(), device, bytes) == MP_OK, "copying back from the device failed");
    } catch (...) {
      dev->free_device(dev->ctx, device);
      throw;
    }
    dev->free_device(dev->ctx, device);
    const int64_t bad = file.first_mismatch(12345, back.data(), bytes);
    expect(bad < 0, "device bytes differ from the file first at byte " + std::to_string(bad));
  });

  list.run("destroying an instance with reads still in flight neither crashes nor hangs", [&] {
    std::vector<Read> reads = random_reads(rng, 64, 64 * 1024);  // outlive the instance, as the ABI asks
    for (int i = 0; i < 5; ++i) {
      mp::TransportHandle t = make(c, host, config);
      const uint32_t f = t.open(path);
      submit(t, reads, f);
      t.reset();
    }
  });

  list.run("destroying an instance with completed tickets nobody waited for works", [&] {
    std::vector<Read> first = random_reads(rng, 4, 4096), second = random_reads(rng, 4, 4096);
    mp::TransportHandle t = make(c, host, config);
    const uint32_t f = t.open(path);
    submit(t, first, f);
    submit(t, second, f);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    t.reset();
  });
}

}  // namespace moepage::conform
