// The mapped transport over a stand-in GPU device service (kind HIP, host memory, copies done at
// once and recorded): each file mapped and registered once (page-rounded), max_locked refusing a
// file by name, device reads copied straight from the registered mapping (demand and prefetch on
// their own streams; reads that continue each other as one copy), a host without register_host
// refused, and a file cut short after open failing its reads instead of killing the process; and
// four threads reading at once (in the TSan suite).
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "host/host_api.hpp"
#include "host/plugin_loader.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "profile/option_validation.hpp"
#include "support/pattern_file.hpp"
#include "support/test_paths.hpp"

using namespace moepage::test;
namespace fs = std::filesystem;

namespace {

// What the stand-in GPU saw (its calls may come from many threads: guarded by `mutex`).
struct GpuLog {
  std::mutex mutex;
  std::map<const void*, uint64_t> registered;  // live registrations
  uint32_t registrations = 0, unregistrations = 0;
  bool refuse_registration = false;
  bool refuse_copies = false;
  struct Copy {
    const void* src;
    uint64_t bytes;
    mp_stream stream;
  };
  std::vector<Copy> copies;
};
GpuLog* g_log = nullptr;

mp_device_service fake_gpu(bool with_registration) {
  mp_device_service d{};
  d.struct_size = with_registration ? sizeof d : uint32_t(offsetof(mp_device_service, register_host));
  d.kind = MP_DEVICE_HIP;
  d.alloc_device = [](void*, uint64_t bytes, void** out) -> mp_status {
    return (*out = std::malloc(bytes + 1)) ? MP_OK : MP_ERR_OOM;
  };
  d.free_device = [](void*, void* p) -> mp_status {
    std::free(p);
    return MP_OK;
  };
  d.alloc_pinned = d.alloc_device;
  d.free_pinned = d.free_device;
  d.stream_create = [](void*, mp_stream* out) -> mp_status {
    static int streams[64];
    static int next = 0;
    *out = reinterpret_cast<mp_stream>(&streams[next++ % 64]);
    return MP_OK;
  };
  d.stream_destroy = [](void*, mp_stream) -> mp_status { return MP_OK; };
  d.stream_synchronize = [](void*, mp_stream) -> mp_status { return MP_OK; };
  d.event_create = [](void*, mp_event* out) -> mp_status {
    *out = reinterpret_cast<mp_event>(new int(0));
    return MP_OK;
  };
  d.event_destroy = [](void*, mp_event e) -> mp_status {
    delete reinterpret_cast<int*>(e);
    return MP_OK;
  };
  d.event_record = [](void*, mp_event, mp_stream) -> mp_status { return MP_OK; };
  d.stream_wait_event = [](void*, mp_stream, mp_event) -> mp_status { return MP_OK; };
  d.event_query = [](void*, mp_event) -> mp_status { return MP_OK; };
  d.event_synchronize = [](void*, mp_event) -> mp_status { return MP_OK; };
  d.copy_to_device_async = [](void*, void* dst, const void* src, uint64_t bytes, mp_stream stream) -> mp_status {
    std::lock_guard lock(g_log->mutex);
    if (g_log->refuse_copies) return MP_ERR_DEVICE;
    g_log->copies.push_back(GpuLog::Copy{src, bytes, stream});
    std::memcpy(dst, src, bytes);
    return MP_OK;
  };
  d.copy_to_host = [](void*, void* dst, const void* src, uint64_t bytes) -> mp_status {
    std::memcpy(dst, src, bytes);
    return MP_OK;
  };
  d.memory_info = [](void*, uint64_t* free_bytes, uint64_t* total) -> mp_status {
    *free_bytes = *total = uint64_t(1) << 34;
    return MP_OK;
  };
  d.register_host = [](void*, void* p, uint64_t bytes) -> mp_status {
    if (g_log->refuse_registration) return MP_ERR_DEVICE;
    g_log->registered[p] = bytes;
    ++g_log->registrations;
    return MP_OK;
  };
  d.unregister_host = [](void*, void* p) -> mp_status {
    g_log->registered.erase(p);
    ++g_log->unregistrations;
    return MP_OK;
  };
  return d;
}

// The plugin loaded by a host whose device is the stand-in GPU.
class MappedOnGpu {
 public:
  explicit MappedOnGpu(bool with_registration = true) : device_(fake_gpu(with_registration)) {
    g_log = &log;
    api_ = *inner_.get();
    api_.device = &device_;
    loaded_ = moepage::host::load_plugin(plugin_dir() / "libmoepage-transport-mapped.so", &api_);
    for (const auto& c : loaded_.components)
      if (c.kind() == MP_KIND_TRANSPORT && c.name() == "mapped") component_ = &c;
    REQUIRE(component_ != nullptr);
  }
  mp::TransportHandle create(std::vector<std::pair<std::string, std::string>> options = {}) {
    moepage::profile::ComponentSpec spec{"transport", "mapped", "test", {}};
    for (auto& [name, value] : options) spec.options.push_back({name, value, "/", "test"});
    const mp_component_descriptor& d = *component_->descriptor;
    options_.push_back(moepage::profile::validate_options(spec, {d.options, d.n_options}));
    return mp::TransportHandle::create(d, component_->library, &api_, options_.back().c_options());
  }

  GpuLog log;

 private:
  moepage::host::HostApi inner_;
  mp_device_service device_;
  mp_host_api api_{};
  moepage::host::LoadResult loaded_;
  const moepage::host::LoadedComponent* component_ = nullptr;
  std::deque<moepage::profile::ResolvedOptions> options_;
};

mp_read_request device_read(uint32_t file, uint64_t offset, uint64_t length, void* dst, int32_t priority) {
  return mp_read_request{sizeof(mp_read_request), file, offset, length, dst, 0, MP_MEM_DEVICE, priority, 7};
}

}  // namespace

TEST_CASE("each file is mapped and registered once, and device reads are copies straight from the mapping") {
  MappedOnGpu gpu;
  PatternFile file(3 * 4096 + 100);
  {
    auto t = gpu.create();
    const uint32_t f = t.open(file.path().string());
    CHECK(t.open(file.path().string()) == f);  // the same file: the same handle, registered once
    REQUIRE(gpu.log.registrations == 1);
    const auto [base, bytes] = *gpu.log.registered.begin();
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE)), size = 3 * 4096 + 100;
    CHECK(bytes == (size + page - 1) / page * page);  // the whole mapping, page-rounded
    std::vector<uint8_t> a(5000), b(777);
    t.wait(t.submit(std::vector<mp_read_request>{device_read(f, 1234, a.size(), a.data(), MP_READ_DEMAND),
                                                 device_read(f, 9000, b.size(), b.data(), MP_READ_PREFETCH)}));
    CHECK(matches_pattern(a.data(), a.size(), 1234));
    CHECK(matches_pattern(b.data(), b.size(), 9000));
    REQUIRE(gpu.log.copies.size() == 2);
    CHECK(gpu.log.copies[0].src == static_cast<const char*>(base) + 1234);  // no staging copy
    CHECK(gpu.log.copies[1].src == static_cast<const char*>(base) + 9000);
    CHECK(gpu.log.copies[0].stream != gpu.log.copies[1].stream);  // demand and prefetch lanes
    const mp_ticket ticket = t.submit(std::vector<mp_read_request>{device_read(f, 0, 10, a.data(), MP_READ_DEMAND)});
    const std::optional<mp_event> e = t.ticket_event(ticket);
    REQUIRE(e.has_value());
    CHECK(*e != nullptr);
    t.wait(ticket);
  }
  CHECK(gpu.log.unregistrations == 1);  // at destroy
  CHECK(gpu.log.registered.empty());
}

TEST_CASE("reads of a batch that continue each other in file, buffer and stream go as one copy") {
  MappedOnGpu gpu;
  PatternFile file(64 * 1024);
  auto t = gpu.create();
  const uint32_t f = t.open(file.path().string());
  const char* base = static_cast<const char*>(gpu.log.registered.begin()->first);
  // An expert laid out as in its file: scale, weight, scale, weight, back to back in one slot.
  std::vector<uint8_t> slot(4 * 1000), other(1000);
  auto part = [&](uint64_t at, uint64_t length, int32_t priority = MP_READ_DEMAND) {
    mp_read_request r = device_read(f, 2000 + at, length, slot.data(), priority);
    r.dst_offset = at;
    r.tag = 100 + at;
    return r;
  };
  t.wait(t.submit(std::vector<mp_read_request>{part(0, 300), part(300, 1700), part(2000, 2000)}));
  REQUIRE(gpu.log.copies.size() == 1);
  CHECK(gpu.log.copies[0].src == base + 2000);
  CHECK(gpu.log.copies[0].bytes == 4000);
  CHECK(matches_pattern(slot.data(), slot.size(), 2000));

  // A break in the file offset, the destination, or the stream starts another copy.
  gpu.log.copies.clear();
  std::fill(slot.begin(), slot.end(), 0);
  mp_read_request gap = part(1000, 500);
  gap.offset += 8;  // the file skips 8 bytes the slot does not
  mp_read_request elsewhere = device_read(f, 2000 + 1500, 1000, other.data(), MP_READ_DEMAND);
  t.wait(t.submit(std::vector<mp_read_request>{part(0, 1000), gap, elsewhere, part(2500, 500),
                                               part(3000, 1000, MP_READ_PREFETCH)}));
  REQUIRE(gpu.log.copies.size() == 5);
  CHECK(gpu.log.copies[0].bytes == 1000);
  CHECK(gpu.log.copies[1].src == base + 3008);
  CHECK(gpu.log.copies[4].stream != gpu.log.copies[3].stream);
  CHECK(matches_pattern(other.data(), other.size(), 3500));
  CHECK(matches_pattern(slot.data() + 2500, 1500, 4500));

  // A run reaching past the end of the file is read request by request: the one past the end is
  // named, the ones inside are copied.
  gpu.log.copies.clear();
  std::vector<uint8_t> end_slot(4096);
  const mp_read_request tail = device_read(f, 64 * 1024 - 4080, 4080, end_slot.data(), MP_READ_DEMAND);
  mp_read_request past = device_read(f, 64 * 1024, 16, end_slot.data(), MP_READ_DEMAND);
  past.dst_offset = 4080;
  past.tag = 55;
  try {
    t.wait(t.submit(std::vector<mp_read_request>{tail, past}));
    FAIL("a read past the end of the file succeeded");
  } catch (const mp::TicketError& e) {
    CHECK(std::string(e.what()).find("unexpected end of file at offset 65536") != std::string::npos);
    CHECK(e.result().failed_request == 1);
    CHECK(e.result().failed_tag == 55);
    CHECK(e.result().failed_count == 1);
  }
  CHECK(gpu.log.copies.size() == 1);
  CHECK(matches_pattern(end_slot.data(), 4080, 64 * 1024 - 4080));

  // A refused copy fails every read it carried, naming the first.
  gpu.log.refuse_copies = true;
  try {
    t.wait(t.submit(std::vector<mp_read_request>{part(0, 300), part(300, 1700), part(2000, 2000)}));
    FAIL("a refused copy succeeded");
  } catch (const mp::TicketError& e) {
    CHECK(std::string(e.what()).find("copying 4000 bytes at offset 2000 to the device (requests 0 to 2, one copy)") !=
          std::string::npos);
    CHECK(e.result().failed_request == 0);
    CHECK(e.result().failed_tag == 100);
    CHECK(e.result().failed_count == 3);
  }
  gpu.log.refuse_copies = false;
  t.wait(t.submit(std::vector<mp_read_request>{part(0, 300)}));  // the instance goes on
}

TEST_CASE("prefetch_lane: shared puts prefetch copies on the demand stream, in submission order") {
  MappedOnGpu gpu;
  PatternFile file(2 * 4096);
  auto t = gpu.create({{"prefetch_lane", "shared"}});
  const uint32_t f = t.open(file.path().string());
  std::vector<uint8_t> a(3000), b(2000), c(100);
  const mp_ticket first =
      t.submit(std::vector<mp_read_request>{device_read(f, 100, b.size(), b.data(), MP_READ_PREFETCH)});
  t.wait(t.submit(std::vector<mp_read_request>{device_read(f, 5000, a.size(), a.data(), MP_READ_DEMAND),
                                               device_read(f, 7, c.size(), c.data(), MP_READ_PREFETCH)}));
  t.wait(first);
  CHECK(matches_pattern(a.data(), a.size(), 5000));
  CHECK(matches_pattern(b.data(), b.size(), 100));
  CHECK(matches_pattern(c.data(), c.size(), 7));
  REQUIRE(gpu.log.copies.size() == 3);
  CHECK(gpu.log.copies[0].src == static_cast<const char*>(gpu.log.registered.begin()->first) + 100);
  CHECK(gpu.log.copies[0].stream == gpu.log.copies[1].stream);
  CHECK(gpu.log.copies[1].stream == gpu.log.copies[2].stream);
  // Any other value is refused when the transport is created, naming the option.
  CHECK_THROWS_WITH(gpu.create({{"prefetch_lane", "both"}}), doctest::Contains("prefetch_lane"));
}

TEST_CASE("a file that would lock more than max_locked, or that the device refuses, is refused at open by name") {
  MappedOnGpu gpu;
  PatternFile small(5000), large(40000);
  auto t = gpu.create({{"max_locked", "32KiB"}});
  t.open(small.path().string());  // 8 KiB locked
  CHECK_THROWS_WITH(
      t.open(large.path().string()),
      doctest::Contains(("mapped: " + large.path().string() + ": registering its 40960 bytes would lock").c_str()));
  CHECK_THROWS_WITH(t.open(large.path().string()), doctest::Contains("more than max_locked (32768 bytes)"));
  gpu.log.refuse_registration = true;
  PatternFile other(100);
  CHECK_THROWS_WITH(
      t.open(other.path().string()),
      doctest::Contains(("mapped: " + other.path().string() + ": the device refused to register").c_str()));
  gpu.log.refuse_registration = false;
  CHECK_NOTHROW(t.open(other.path().string()));  // its next open maps it again
}

TEST_CASE("a GPU host without register_host (ABI 1.5) is refused at create, naming what is missing") {
  MappedOnGpu gpu(false);
  CHECK_THROWS_WITH(gpu.create(), doctest::Contains("cannot register host memory (register_host, ABI 1.6); use "
                                                    "pinned-async"));
}

TEST_CASE("reads past the end of the file as it was at open fail naming file and offset; the instance goes on") {
  MappedOnGpu gpu;
  PatternFile file(10000);
  auto t = gpu.create();
  const uint32_t f = t.open(file.path().string());
  std::vector<uint8_t> dst(200);
  CHECK_THROWS_WITH(
      t.wait(t.submit(std::vector<mp_read_request>{device_read(f, 9900, dst.size(), dst.data(), MP_READ_DEMAND)})),
      doctest::Contains((file.path().string() + ": unexpected end of file at offset 9900").c_str()));
  // Host destinations read the file, not the mapping: cut short now, the read fails instead of a
  // SIGBUS, and a read inside what is left works.
  fs::resize_file(file.path(), 4096);
  mp_read_request host_read = device_read(f, 6000, 100, dst.data(), MP_READ_DEMAND);
  host_read.dst_kind = MP_MEM_HOST;
  CHECK_THROWS_WITH(t.wait(t.submit(std::vector<mp_read_request>{host_read})), doctest::Contains(file.path().c_str()));
  host_read.offset = 100;
  t.wait(t.submit(std::vector<mp_read_request>{host_read}));
  CHECK(matches_pattern(dst.data(), 100, 100));
}

TEST_CASE("four threads submit, poll and wait device and host reads at once, byte-exact") {
  MappedOnGpu gpu;
  PatternFile a(200000), b(70000);
  auto t = gpu.create();
  const uint32_t fa = t.open(a.path().string()), fb = t.open(b.path().string());
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < 4; ++s)
    threads.emplace_back([&, s] {
      std::mt19937_64 rng(7 + s);
      for (int round = 0; round < 50; ++round) {
        const bool first = rng() % 2 == 0;
        const uint64_t size = first ? 200000 : 70000, length = 1 + rng() % 5000, offset = rng() % (size - length);
        std::vector<uint8_t> dst(length);
        mp_read_request r = device_read(first ? fa : fb, offset, length, dst.data(),
                                        rng() % 3 == 0 ? MP_READ_PREFETCH : MP_READ_DEMAND);
        if (rng() % 4 == 0) r.dst_kind = MP_MEM_HOST;
        // Every third round the range goes as up to three reads that continue each other (one
        // merged copy for device destinations).
        std::vector<mp_read_request> batch{r};
        if (round % 3 == 0 && length >= 3) {
          const uint64_t cut1 = length / 3, cut2 = 2 * length / 3;
          batch.assign(3, r);
          batch[0].length = cut1;
          batch[1].offset += cut1, batch[1].dst_offset = cut1, batch[1].length = cut2 - cut1;
          batch[2].offset += cut2, batch[2].dst_offset = cut2, batch[2].length = length - cut2;
        }
        const mp_ticket ticket = t.submit(batch);
        if (round % 2 == 0) {
          while (!t.poll(ticket)) std::this_thread::yield();
        } else {
          t.wait(ticket);
        }
        if (!matches_pattern(dst.data(), length, offset)) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
  CHECK(gpu.log.registrations == 2);
}
