// The plugin-side adapter on its own, in process: formatting, options and the trampolines.
#include <doctest/doctest.h>

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "moepage/cpp/plugin_adapter.hpp"

namespace {

mp_options make_options(std::initializer_list<mp_option_value> values, std::vector<mp_option_value>& storage) {
  storage.assign(values.begin(), values.end());
  return mp_options{sizeof(mp_options), static_cast<uint32_t>(storage.size()), storage.data()};
}
mp_option_value value(const char* name, const char* text) { return {sizeof(mp_option_value), name, text}; }

}  // namespace

TEST_CASE("format substitutes each {} in turn and keeps doubled braces literal") {
  CHECK(mp::format("read {} bytes of {}", 42, "model.safetensors") == "read 42 bytes of model.safetensors");
  CHECK(mp::format("{{}} {}", 1) == "{} 1");
  CHECK(mp::format("no args {}") == "no args {}");
  CHECK(mp::format("{} only", 1, 2) == "1 only");
}

TEST_CASE("options are read by type and a bad value names the option") {
  std::vector<mp_option_value> storage;
  const mp_options raw = make_options({value("threads", "4"), value("budget", "auto"), value("reserve", "8589934592"),
                                       value("ratio", "0.5"), value("pin", "true"), value("bad", "4x")},
                                      storage);
  const mp::Options o(&raw);
  CHECK(o.get_int("threads") == 4);
  CHECK(o.is_auto("budget"));
  CHECK_FALSE(o.is_auto("reserve"));
  CHECK(o.get_size("reserve") == 8589934592ull);
  CHECK(o.get_double("ratio") == doctest::Approx(0.5));
  CHECK(o.get_bool("pin"));
  CHECK(o.get_string("budget") == "auto");
  CHECK_THROWS_WITH(o.get_int("bad"), "option 'bad' = '4x' is not an integer");
  CHECK_THROWS_WITH(o.get_size("budget"), "option 'budget' = 'auto' is not a byte count");
  CHECK_THROWS_WITH(o.get_bool("threads"), "option 'threads' = '4' is not true or false");
  CHECK_THROWS_WITH(o.get_string("missing"), "option 'missing' was not given to the component");
  try {
    o.get_size("bad");
  } catch (const mp::Error& e) {
    CHECK(e.status() == MP_ERR_INVALID_ARG);
  }
}

namespace {
class Minimal {
 public:
  Minimal(const mp_host_api*, const mp::Options& o) : fail_(o.has("fail")) {
    if (o.has("oom")) throw std::bad_alloc();
  }
  void open(const char*, uint32_t* file) { *file = 7; }
  mp_status submit(const mp_read_request*, uint32_t, mp_ticket*) { return MP_ERR_IO; }
  mp_status wait(mp_ticket) { return fail_ ? MP_ERR_IO : MP_OK; }
  mp_status poll(mp_ticket) { return MP_PENDING; }
  void stats(mp_transport_stats*) {}
  mp_status ticket_event(mp_ticket, mp_event* out) {
    *out = nullptr;
    return MP_OK;
  }

 private:
  bool fail_;
};
}  // namespace

TEST_CASE("create reports a constructor's bad_alloc as oom in the error buffer") {
  const mp_transport_vtable* v = mp::transport_vtable<Minimal>();
  std::vector<mp_option_value> storage;
  const mp_options raw = make_options({value("oom", "1")}, storage);
  void* self = reinterpret_cast<void*>(1);
  char err[64] = "unchanged";
  CHECK(v->create(nullptr, &raw, &self, err, sizeof err) == MP_ERR_OOM);
  CHECK(self == nullptr);
  CHECK(std::string(err) == "out of memory");
  char tiny[4];
  CHECK(v->create(nullptr, &raw, &self, tiny, sizeof tiny) == MP_ERR_OOM);
  CHECK(std::string(tiny) == "out");  // truncated, still terminated
}

TEST_CASE("a void member succeeds, a status is passed through, and a failing status gets a message") {
  const mp_transport_vtable* v = mp::transport_vtable<Minimal>();
  CHECK(v->struct_size == sizeof(mp_transport_vtable));
  CHECK((v->ticket_event != nullptr));  // provided, so present
  void* self = nullptr;
  char err[64];
  REQUIRE(v->create(nullptr, nullptr, &self, err, sizeof err) == MP_OK);
  uint32_t file = 0;
  CHECK(v->open(self, "f", &file) == MP_OK);
  CHECK(file == 7);
  CHECK(std::string(v->last_error(self)) == "");
  CHECK(v->poll(self, 1) == MP_PENDING);
  CHECK(std::string(v->last_error(self)) == "");  // pending is not an error
  mp_ticket t = 0;
  CHECK(v->submit(self, nullptr, 0, &t) == MP_ERR_IO);
  CHECK(std::string(v->last_error(self)) == "submit failed: io");
  CHECK(v->open(nullptr, "f", &file) == MP_ERR_INVALID_ARG);
  v->destroy(self);
}

TEST_CASE("descriptors carry kind, name, options and the matching vtable only") {
  static constexpr mp_option_def opts[] = {mp::option(MP_OPT_INT, "threads", "4", "reader threads"),
                                           mp::enum_option("policy", "lru|lfu", "lru", "eviction policy")};
  const mp_component_descriptor d = mp::make_transport_descriptor<Minimal>("minimal", "0.1", "test", MP_CAP_CPU, opts);
  CHECK(d.struct_size == sizeof(mp_component_descriptor));
  CHECK(d.kind == MP_KIND_TRANSPORT);
  CHECK(std::string(d.name) == "minimal");
  CHECK(d.n_options == 2);
  CHECK(std::string(d.options[1].choices) == "lru|lfu");
  CHECK(d.options[0].struct_size == sizeof(mp_option_def));
  CHECK((d.score == nullptr));
  CHECK(d.transport == mp::transport_vtable<Minimal>());
  CHECK(d.pager == nullptr);
  CHECK(d.arch == nullptr);
}

TEST_CASE("the manifest is refused when the host's buffer is smaller than ABI v1's") {
  static const mp_component_descriptor comps[] = {
      mp::make_transport_descriptor<Minimal>("minimal", "0.1", "test", MP_CAP_CPU)};
  mp_plugin_manifest m{};
  m.struct_size = sizeof(mp_plugin_manifest) - 8;
  CHECK(mp::fill_manifest(&m, "p", "1", comps) == MP_ERR_INVALID_ARG);
  m.struct_size = sizeof(mp_plugin_manifest);
  CHECK(mp::fill_manifest(&m, "p", "1", comps) == MP_OK);
  CHECK(m.abi_major == MP_ABI_MAJOR);
  CHECK(m.n_components == 1);
}
