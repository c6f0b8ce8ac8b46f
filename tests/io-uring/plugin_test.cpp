// The io-uring plugin loaded from the build through the host loader: its option table and the
// one-line errors for bad values, direct: on/auto/off on a file system that refuses O_DIRECT
// (procfs), and on one that does it for real, where the page cache must stay empty.
#include <doctest/doctest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <random>

#include "host/plugin_loader.hpp"
#include "io_uring_fixture.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "profile/option_validation.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

using namespace moepage::test;
namespace fs = std::filesystem;

namespace {

using Options = std::vector<std::pair<std::string, std::string>>;

class UringPlugin {
 public:
  UringPlugin() : loaded_(moepage::host::load_plugin(plugin_dir() / "libmoepage-transport-io-uring.so", host_.get())) {
    for (const auto& c : loaded_.components)
      if (c.kind() == MP_KIND_TRANSPORT && c.name() == "io-uring") component_ = &c;
    REQUIRE(component_ != nullptr);
  }
  const mp_component_descriptor& descriptor() const { return *component_->descriptor; }
  const LogHost& host() const { return host_; }

  mp::TransportHandle create(Options options) {
    moepage::profile::ComponentSpec spec{"transport", "io-uring", "test", {}};
    for (auto& [name, value] : options) spec.options.push_back({name, value, "/", "test"});
    options_.push_back(moepage::profile::validate_options(spec, {descriptor().options, descriptor().n_options}));
    return mp::TransportHandle::create(descriptor(), component_->library, host_.get(), options_.back().c_options());
  }
  // The message creating an instance with `options` fails with ("" when it does not).
  std::string refusal(Options options) {
    try {
      create(std::move(options));
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

 private:
  LogHost host_;
  moepage::host::LoadResult loaded_;
  const moepage::host::LoadedComponent* component_ = nullptr;
  std::deque<moepage::profile::ResolvedOptions> options_;
};

// Pages of `path` in the page cache.
size_t cached_pages(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const size_t size = fs::file_size(path);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  REQUIRE(map != MAP_FAILED);
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((size + page - 1) / page);
  REQUIRE(::mincore(map, size, in_core.data()) == 0);
  ::munmap(map, size);
  size_t n = 0;
  for (unsigned char c : in_core) n += c & 1;
  return n;
}

// Writes `size` pattern bytes to `path`, on disk, and drops them from the page cache.
void write_uncached(const fs::path& path, uint64_t size) {
  std::vector<uint8_t> bytes(size);
  for (uint64_t i = 0; i < size; ++i) bytes[i] = pattern_byte(i);
  write_file(path, bytes);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::fdatasync(fd) == 0);
  REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  ::close(fd);
}

mp_ticket submit(mp::TransportHandle& t, const std::vector<mp_read_request>& requests) { return t.submit(requests); }

std::string first_bytes(const fs::path& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), std::streamsize(n));
  s.resize(size_t(in.gcount()));
  return s;
}

}  // namespace

TEST_CASE("the io-uring plugin declares its options with defaults and help") {
  UringPlugin plugin;
  const mp_component_descriptor& d = plugin.descriptor();
  CHECK(std::string(d.name) == "io-uring");
  CHECK((d.capabilities & (MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC)) == (MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC));
  std::map<std::string, std::string> defaults;
  for (uint32_t i = 0; i < d.n_options; ++i) {
    defaults[d.options[i].name] = d.options[i].default_value;
    CHECK(std::strlen(d.options[i].help) > 20);
  }
  CHECK(defaults == std::map<std::string, std::string>{{"queue_depth", "8"},
                                                       {"buffers", "16"},
                                                       {"buffer_size", "8MiB"},
                                                       {"direct", "auto"},
                                                       {"fixed_buffers", "auto"},
                                                       {"sqpoll", "false"},
                                                       {"workers", "0"}});
}

TEST_CASE("out-of-range options are refused in one line naming the option, its value and the range") {
  UringPlugin plugin;
  const std::vector<std::pair<Options, std::string>> cases = {
      {{{"queue_depth", "0"}}, "io-uring: option queue_depth = 0: expected 1 to 4096 reads in flight"},
      {{{"queue_depth", "5000"}}, "io-uring: option queue_depth = 5000: expected 1 to 4096"},
      {{{"buffers", "0"}}, "io-uring: option buffers = 0: expected 1 to 1024 staging buffers"},
      {{{"buffer_size", "5000"}}, "io-uring: option buffer_size = 5000 bytes: expected a multiple of 4KiB"},
      {{{"buffer_size", "128MiB"}}, "io-uring: option buffer_size = 134217728 bytes"},
      {{{"buffers", "1024"}, {"buffer_size", "64MiB"}}, "io-uring: options buffers x buffer_size = 68719476736 bytes"},
      {{{"workers", "-1"}}, "io-uring: option workers = -1: expected 0 (submit inline) to 256 kernel worker threads"},
      {{{"workers", "257"}}, "io-uring: option workers = 257: expected 0"},
  };
  for (const auto& [options, expected] : cases) {
    const std::string message = plugin.refusal(options);
    CAPTURE(message);
    CHECK(message.find(expected) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  // Values of the wrong type never reach the plugin: the host refuses them against the table.
  CHECK(plugin.refusal({{"direct", "sometimes"}}).find("direct") != std::string::npos);
  CHECK(plugin.refusal({{"queue_depth", "1"}, {"buffers", "1"}, {"buffer_size", "4KiB"}}) == "");
}

TEST_CASE("sqpoll: true gives a working ring or a one-line error naming it") {
  UringPlugin plugin;
  const std::string refused = plugin.refusal({{"sqpoll", "true"}});
  MESSAGE("sqpoll: " << (refused.empty() ? "available" : refused));
  if (!refused.empty()) {
    CHECK(refused.find("sqpoll: true") != std::string::npos);
    return;
  }
  PatternFile file(1 << 20);
  auto t = plugin.create({{"sqpoll", "true"}});
  const uint32_t f = t.open(file.path().string());
  std::vector<uint8_t> dst(300000);
  t.wait(submit(t, {request(f, 12345, dst.size(), dst.data())}));
  CHECK(matches_pattern(dst.data(), dst.size(), 12345));
}

TEST_CASE("direct: on names a file whose file system refuses O_DIRECT; auto reads it buffered after one info line") {
  // procfs refuses O_DIRECT on every kernel; /proc/version reads the same for every reader.
  const fs::path refuses = "/proc/version";
  UringPlugin plugin;
  auto strict = plugin.create({{"direct", "on"}});
  try {
    strict.open(refuses.string());
    FAIL("direct: on opened a procfs file");
  } catch (const mp::PluginError& e) {
    CHECK(e.status() == MP_ERR_UNSUPPORTED);
    const std::string what = e.what();
    CHECK(what.ends_with(
        ": io-uring: /proc/version: the file system refuses O_DIRECT (direct: on; direct: auto reads such files "
        "through the page cache)"));
    CHECK(what.find('\n') == std::string::npos);
  }
  const std::string expected = first_bytes(refuses, 13);
  REQUIRE(expected == "Linux version");
  for (const char* mode : {"auto", "off"}) {
    CAPTURE(mode);
    auto t = plugin.create({{"direct", mode}});
    const uint32_t f = t.open(refuses.string());
    CHECK(t.open(refuses.string()) == f);  // the same path is one handle
    std::string got(13, '\0');
    t.wait(submit(t, {request(f, 0, 13, got.data())}));
    CHECK(got == expected);
  }
  CHECK(plugin.host().count("/proc/version: the file system refuses O_DIRECT; reading it") == 1);
}

TEST_CASE("O_DIRECT reads on a real file system leave the page cache empty; buffered reads fill it") {
  // The first folder whose file system really does O_DIRECT: the temporary folder, else the build's.
  std::optional<TempDir> tmp;
  fs::path file;
  DirectProbe probe;
  for (const fs::path& dir : {fs::temp_directory_path(), build_dir()}) {
    fs::path candidate = dir / ("moepage-io-uring-direct-" + std::to_string(::getpid()));
    write_file(candidate, std::string(4096, 'x'));
    probe = probe_direct_io(candidate);
    fs::remove(candidate);
    MESSAGE(probe.note);
    if (probe.real) {
      file = candidate;
      break;
    }
  }
  if (file.empty()) {
    WARN_MESSAGE(false, "no folder here does real O_DIRECT: the page-cache check did not run");
    return;
  }
  struct Remove {
    fs::path p;
    ~Remove() { fs::remove(p); }
  } remove{file};
  constexpr uint64_t kSize = 4 << 20;
  write_uncached(file, kSize);
  REQUIRE(cached_pages(file) == 0);

  UringPlugin plugin;
  {
    auto t = plugin.create({{"direct", "on"}, {"buffer_size", "256KiB"}, {"buffers", "4"}});
    const uint32_t f = t.open(file.string());
    // The whole file, an unaligned range across windows, and a single unaligned byte.
    std::vector<uint8_t> all(kSize), middle(700001), one(1);
    t.wait(submit(t, {request(f, 0, kSize, all.data()), request(f, 123457, middle.size(), middle.data()),
                      request(f, 3 * probe.alignment + 1, 1, one.data())}));
    CHECK(matches_pattern(all.data(), kSize, 0));
    CHECK(matches_pattern(middle.data(), middle.size(), 123457));
    CHECK(matches_pattern(one.data(), 1, 3 * probe.alignment + 1));
    CHECK(cached_pages(file) == 0);
    // A lone byte costs one aligned block of the file, padding included.
    const uint64_t before = t.stats().bytes_read;
    t.wait(submit(t, {request(f, 5 * probe.alignment + 7, 1, one.data())}));
    CHECK(t.stats().bytes_read - before == probe.alignment);
  }
  {
    auto t = plugin.create({{"direct", "off"}});
    const uint32_t f = t.open(file.string());
    std::vector<uint8_t> all(kSize);
    t.wait(submit(t, {request(f, 0, kSize, all.data())}));
    CHECK(matches_pattern(all.data(), kSize, 0));
    // Nearly every page: the machine's memory pressure may already have dropped a few again.
    CHECK(cached_pages(file) >= kSize / size_t(::sysconf(_SC_PAGESIZE)) * 3 / 4);
  }
}

TEST_CASE("device destinations land through the device service and ticket_event gives an event") {
  UringPlugin plugin;
  PatternFile file(3 << 20);
  auto t = plugin.create({{"buffers", "2"}, {"buffer_size", "64KiB"}});
  const uint32_t f = t.open(file.path().string());
  const mp_device_service* dev = plugin.host().get()->device;
  void* device = nullptr;
  REQUIRE(dev->alloc_device(dev->ctx, 1 << 20, &device) == MP_OK);
  const mp_ticket ticket = submit(t, {request(f, 777, 1 << 20, device, 0, 1, MP_MEM_DEVICE)});
  CHECK(t.ticket_event(ticket).has_value());
  t.wait(ticket);
  std::vector<uint8_t> back(1 << 20);
  REQUIRE(dev->copy_to_host(dev->ctx, back.data(), device, back.size()) == MP_OK);
  CHECK(matches_pattern(back.data(), back.size(), 777));
  dev->free_device(dev->ctx, device);
}
