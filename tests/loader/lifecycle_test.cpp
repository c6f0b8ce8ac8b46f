// Instances through the host-side handles: shutdown order, library keep-alive, exceptions thrown
// inside plugins arriving as statuses, and optional vtable members.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

#include "host/host_api.hpp"
#include "host/log.hpp"
#include "host/plugin_stack.hpp"
#include "host/registry.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "support.hpp"

using moepage::host::HostApi;
using moepage::host::LogCapture;
using moepage::host::PluginStack;
using moepage::host::Registry;

namespace {

// Index of the first captured line containing `text`, or -1.
long line_index(const LogCapture& logs, const std::string& text) {
  const auto lines = logs.lines();
  const auto it =
      std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
  return it == lines.end() ? -1 : static_cast<long>(it - lines.begin());
}

PluginStack make_stack(const Registry& registry, const HostApi& host) {
  PluginStack stack;
  const auto& t = registry.find(MP_KIND_TRANSPORT, "fake-life");
  stack.transport = mp::TransportHandle::create(*t.descriptor, t.library, host.get(), nullptr);
  mp_pager_create_args pargs{};
  pargs.struct_size = sizeof pargs;
  pargs.host = host.get();
  pargs.transport = stack.transport.ref();
  const auto& p = registry.find(MP_KIND_PAGER, "fake-life");
  stack.pager = mp::PagerHandle::create(*p.descriptor, p.library, pargs);
  mp_arch_create_args aargs{};
  aargs.struct_size = sizeof aargs;
  aargs.host = host.get();
  aargs.checkpoint_dir = "/nowhere";
  const auto& a = registry.find(MP_KIND_ARCH, "fake-life");
  stack.arch = mp::ArchHandle::create(*a.descriptor, a.library, aargs);
  return stack;
}

// The lifecycle fakes stacked, their registry already gone: the handles alone keep the library
// loaded.
PluginStack stack_outliving_registry(const HostApi& host) {
  Registry registry(host.get());
  registry.scan({loader_test::fake_dir("lifecycle")});
  return make_stack(registry, host);
}

void check_shutdown_order(const LogCapture& logs) {
  INFO(logs.dump());
  const long arch = line_index(logs, "fake-arch: destroyed arch");
  const long pager = line_index(logs, "fake-pager: destroyed pager");
  const long transport = line_index(logs, "fake-transport: destroyed transport");
  const long unloaded =
      line_index(logs, "unloaded plugin library " +
                           std::filesystem::canonical(loader_test::fake_lib("lifecycle", "fake-lifecycle")).string());
  CHECK(arch >= 0);
  CHECK(arch < pager);
  CHECK(pager < transport);
  CHECK(transport < unloaded);
}

}  // namespace

TEST_CASE("shutdown destroys arch, then pager, then transport, and unloads the library last") {
  HostApi host;
  LogCapture logs(spdlog::level::debug);
  PluginStack stack = stack_outliving_registry(host);
  CHECK(line_index(logs, "unloaded plugin library") == -1);
  stack.shutdown();
  check_shutdown_order(logs);
}

TEST_CASE("a plugin stack that is simply destroyed tears down in the same order") {
  HostApi host;
  LogCapture logs(spdlog::level::debug);
  { PluginStack stack = stack_outliving_registry(host); }
  check_shutdown_order(logs);
}

TEST_CASE("an instance keeps working after the registry that loaded its library is gone") {
  HostApi host;
  auto registry = std::make_unique<Registry>(host.get());
  registry->scan({loader_test::fake_dir("good")});
  const auto& c = registry->find(MP_KIND_TRANSPORT, "fake-good");
  mp::TransportHandle t = mp::TransportHandle::create(*c.descriptor, c.library, host.get(), nullptr);
  registry.reset();
  const uint32_t file = t.open("/any/file");
  unsigned char buf[8] = {};
  mp_read_request r{};
  r.struct_size = sizeof r;
  r.file = file;
  r.offset = 250;
  r.length = 6;
  r.dst = buf;
  r.dst_offset = 2;
  const mp_read_request reqs[] = {r};
  t.wait(t.submit(reqs));
  const unsigned char expected[8] = {0, 0, 250, 251, 252, 253, 254, 255};
  CHECK(std::equal(buf, buf + 8, expected));
  CHECK(t.stats().requests == 1);
  CHECK_FALSE(t.ticket_event(1).has_value());  // the fake has no ticket_event
}

TEST_CASE("exceptions thrown inside a plugin reach the host as statuses with their messages") {
  HostApi host;
  Registry registry(host.get());
  registry.scan({loader_test::fake_dir("throwing")});
  const auto& c = registry.find(MP_KIND_TRANSPORT, "fake-throwing");

  auto options_with = [](const char* fail) {
    static mp_option_value value;
    static mp_options options;
    value = mp_option_value{sizeof(mp_option_value), "fail_create", fail};
    options = mp_options{sizeof(mp_options), 1, &value};
    return &options;
  };
  auto status_of = [](auto&& call) {
    try {
      call();
    } catch (const mp::PluginError& e) {
      return std::make_pair(e.status(), std::string(e.what()));
    }
    return std::make_pair(mp_status{MP_OK}, std::string());
  };

  auto created =
      status_of([&] { mp::TransportHandle::create(*c.descriptor, c.library, host.get(), options_with("true")); });
  CHECK(created.first == MP_ERR_INVALID_ARG);
  CHECK(created.second == "transport 'fake-throwing': create failed (invalid-arg): fail_create was set");

  mp::TransportHandle t = mp::TransportHandle::create(*c.descriptor, c.library, host.get(), options_with("false"));
  auto opened = status_of([&] { t.open("x"); });
  CHECK(opened.first == MP_ERR_INTERNAL);
  CHECK(opened.second == "transport 'fake-throwing': open failed (internal): open exploded");
  auto submitted = status_of([&] { t.submit({}); });
  CHECK(submitted.first == MP_ERR_OOM);
  CHECK(submitted.second.find("out of memory") != std::string::npos);
  auto waited = status_of([&] { t.wait(1); });
  CHECK(waited.first == MP_ERR_IO);
  CHECK(waited.second.find("wait: the disk is on fire") != std::string::npos);
  auto polled = status_of([&] { t.poll(1); });
  CHECK(polled.first == MP_ERR_INTERNAL);
  CHECK(polled.second.find("unknown exception") != std::string::npos);
  auto stats = status_of([&] { t.stats(); });
  CHECK(stats.first == MP_ERR_DEVICE);
  CHECK(stats.second.find("stats failed: device") != std::string::npos);
}

TEST_CASE("optional members a class does not provide are NULL in its vtable and skipped by handles") {
  HostApi host;
  Registry registry(host.get());
  registry.scan({loader_test::fake_dir("lifecycle")});
  const auto& p = registry.find(MP_KIND_PAGER, "fake-life");
  CHECK((p.descriptor->pager->observe == nullptr));
  CHECK((p.descriptor->pager->set_trace == nullptr));
  CHECK((p.descriptor->pager->hint != nullptr));
  CHECK((registry.find(MP_KIND_TRANSPORT, "fake-life").descriptor->transport->ticket_event == nullptr));
  CHECK((registry.find(MP_KIND_ARCH, "fake-life").descriptor->arch->synthesize == nullptr));

  PluginStack stack = make_stack(registry, host);
  const int32_t experts[] = {1, 2};
  CHECK_FALSE(stack.pager.observe(0, nullptr, 0, nullptr));
  CHECK_FALSE(stack.pager.set_trace(nullptr, nullptr));
  CHECK(stack.pager.hint(0, experts));
  CHECK(stack.arch.summary() == std::optional<std::string>("fake arch, 3 layers"));
  CHECK(stack.arch.describe().n_layers == 3);
  CHECK_THROWS_WITH_AS(stack.arch.forward(experts, nullptr, 0),
                       "arch 'fake-life': forward failed (not-available): no forward", mp::PluginError);
}

TEST_CASE("a handle never calls a member that lies beyond the vtable's struct_size") {
  HostApi host;
  Registry registry(host.get());
  registry.scan({loader_test::fake_dir("lifecycle")});
  const auto& t = registry.find(MP_KIND_TRANSPORT, "fake-life");
  mp::TransportHandle transport = mp::TransportHandle::create(*t.descriptor, t.library, host.get(), nullptr);
  const auto& p = registry.find(MP_KIND_PAGER, "fake-life");
  // The same pager as if built against an older ABI whose vtable ended before hint().
  mp_pager_vtable older = *p.descriptor->pager;
  older.struct_size = offsetof(mp_pager_vtable, hint);
  mp_component_descriptor d = *p.descriptor;
  d.pager = &older;
  mp_pager_create_args args{};
  args.struct_size = sizeof args;
  args.host = host.get();
  args.transport = transport.ref();
  mp::PagerHandle pager = mp::PagerHandle::create(d, p.library, args);
  const int32_t experts[] = {3};
  CHECK((older.hint != nullptr));
  CHECK_FALSE(pager.hint(0, experts));
}
