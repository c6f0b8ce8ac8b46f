// What the loader does with ABI minors and 1.4's rules: a plugin declares the oldest minor it
// needs; callbacks are required by the minor a plugin declares (mp::abi's tables); option tables
// are walked with their own stride; scores rank the components of one kind for `plugin: auto`;
// and a plugin written in C against the frozen 1.2 structs still loads.
#include <doctest/doctest.h>

#include "host/host_api.hpp"
#include "host/log.hpp"
#include "host/plugin_loader.hpp"
#include "host/registry.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "support.hpp"

using loader_test::fake_dir;
using loader_test::fake_lib;
using moepage::host::HostApi;
using moepage::host::load_plugin;
using moepage::host::LogCapture;
using moepage::host::Registry;
using moepage::host::RegistryError;

namespace {

// A host that claims to be an older 1.x.
mp_host_api host_of_minor(const HostApi& host, uint32_t minor) {
  mp_host_api older = *host.get();
  older.abi_minor = minor;
  return older;
}

}  // namespace

TEST_CASE(
    "a plugin that declares it needs ABI 1.0 only loads on a 1.0 host; one built for the headers' minor does not") {
  HostApi host;
  const mp_host_api v10 = host_of_minor(host, 0);
  LogCapture logs;
  const auto r = load_plugin(fake_lib("min-minor", "fake-min-minor"), &v10);
  INFO(logs.dump());
  CHECK(r.refusals.empty());
  REQUIRE(r.components.size() == 1);
  CHECK(r.components[0].abi_minor == 0);
  const auto current = load_plugin(fake_lib("good", "fake-good"), &v10);
  REQUIRE(current.refusals.size() == 1);
  CHECK(current.refusals[0].message.find("plugin needs a newer host") != std::string::npos);
}

TEST_CASE("callbacks a minor added are required only of plugins that declare that minor") {
  HostApi host;
  LogCapture logs;
  const auto declares_14 = load_plugin(fake_lib("no-results-1.4", "fake-no-results-14"), host.get());
  REQUIRE(declares_14.refusals.size() == 1);
  CHECK(declares_14.refusals[0].message.find("null required callback: wait_result, poll_result") != std::string::npos);
  const auto declares_13 = load_plugin(fake_lib("no-results-1.3", "fake-no-results-13"), host.get());
  INFO(logs.dump());
  CHECK(declares_13.refusals.empty());
  REQUIRE(declares_13.components.size() == 1);
  CHECK(declares_13.components[0].abi_minor == 3);
}

TEST_CASE("an option table whose elements are larger than this host's is read with its own stride") {
  HostApi host;
  const auto r = load_plugin(fake_lib("wide-options", "fake-wide-options"), host.get());
  CHECK(r.refusals.empty());
  REQUIRE(r.components.size() == 1);
  const std::vector<mp_option_def> table = mp::option_table(*r.components[0].descriptor);
  REQUIRE(table.size() == 3);
  CHECK(std::string(table[0].name) == "threads");
  CHECK(std::string(table[1].name) == "policy");
  CHECK(std::string(table[1].choices) == "lru|lfu");
  CHECK(std::string(table[2].name) == "chunk");
  CHECK(std::string(table[2].default_value) == "1MiB");
}

TEST_CASE("auto chooses the highest-scoring component of a kind; never one without a score") {
  HostApi host;
  Registry registry(host.get());
  registry.scan_directory(fake_dir("scored"));
  CHECK(registry.best(MP_KIND_TRANSPORT).name() == "fake-score-9");
  CHECK(registry.best(MP_KIND_TRANSPORT).score == 9);
  CHECK(registry.try_find(MP_KIND_TRANSPORT, "fake-unscored")->score == 0);
  CHECK_THROWS_WITH_AS(registry.best(MP_KIND_PAGER), doctest::Contains("no pager plugin ranks itself"), RegistryError);
}

TEST_CASE("auto refuses to choose between two components with the same top score") {
  HostApi host;
  Registry registry(host.get());
  registry.scan_directory(fake_dir("scored-tie"));
  CHECK_THROWS_WITH_AS(registry.best(MP_KIND_TRANSPORT),
                       "transport plugins 'fake-tie-a' and 'fake-tie-b' both score 7 on this host, so 'auto' cannot "
                       "choose; name one of them",
                       RegistryError);
}

TEST_CASE("a component may not take the name auto") {
  HostApi host;
  const auto r = load_plugin(fake_lib("auto-name", "fake-auto-name"), host.get());
  REQUIRE(r.refusals.size() == 1);
  CHECK(r.refusals[0].message.find("'auto' is reserved") != std::string::npos);
}

TEST_CASE("a transport written in C against the frozen ABI 1.2 structs loads and reads through a handle") {
  HostApi host;
  LogCapture logs;
  const auto r = load_plugin(fake_dir("abi-1.2") / "libfake-abi12.so", host.get());
  INFO(logs.dump());
  CHECK(r.refusals.empty());
  REQUIRE(r.components.size() == 1);
  CHECK(r.components[0].abi_minor == 2);
  const mp_component_descriptor& d = *r.components[0].descriptor;
  CHECK(d.transport->struct_size == offsetof(mp_transport_vtable, wait_result));  // 1.2's vtable
  mp::TransportHandle t = mp::TransportHandle::create(d, r.components[0].library, host.get(), nullptr);
  CHECK_FALSE(t.reports_failed_requests());
  const uint32_t file = t.open(fake_lib("abi-1.2", "fake-abi12").string());
  std::vector<unsigned char> head(4, 0);
  const mp_read_request req{sizeof(mp_read_request), file, 0, 4, head.data(), 0, MP_MEM_HOST, MP_READ_DEMAND, 1};
  t.wait(t.submit({&req, 1}));
  CHECK(head == std::vector<unsigned char>{0x7f, 'E', 'L', 'F'});
}
