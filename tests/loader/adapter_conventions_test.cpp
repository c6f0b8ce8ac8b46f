// The adapter's side of ABI 1.4's conventions, in process: last_error per thread, statuses kept
// through the trampolines, which request failed (wait_result), output structs within the
// caller's struct_size, and option values walked with the host's stride.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "moepage/cpp/host_handles.hpp"
#include "moepage/cpp/plugin_adapter.hpp"
#include "support/output_struct.hpp"

namespace {

// Fails every open() with a long message naming the path; reports which request failed.
class Reporting {
 public:
  Reporting(const mp_host_api*, const mp::Options&) {}
  void open(const char* path, uint32_t*) {
    throw mp::Error(MP_ERR_IO, std::string(200, '.') + " cannot open " + path + " " + std::string(200, '.'));
  }
  mp_status submit(const mp_read_request* r, uint32_t n, mp_ticket* t) {
    if (n > 0 && r[0].length == 13) throw mp::Error(MP_ERR_INTERNAL, "submit: an internal error");
    failed_tag_ = n > 1 ? mp::VersionedArray<mp_read_request>(r, n, "submit")[1].tag : 0;
    *t = 1;
    return MP_OK;
  }
  mp_status wait(mp_ticket, mp_ticket_result* result) {
    if (failed_tag_ == 0) return MP_OK;
    result->failed_request = 1;
    result->failed_tag = failed_tag_;
    result->failed_count = 1;
    throw mp::Error(MP_ERR_DEVICE, "wait: the copy of request 1 failed");
  }
  mp_status poll(mp_ticket t, mp_ticket_result* result) { return wait(t, result); }
  void stats(mp_transport_stats* out) {
    mp_transport_stats s{};
    s.struct_size = sizeof s;
    s.requests = 11;
    s.errors = 22;
    mp::write_out(out, s, "stats");
  }

 private:
  uint64_t failed_tag_ = 0;
};

// A class written for 1.3: wait and poll of the ticket alone.
class Older {
 public:
  Older(const mp_host_api*, const mp::Options&) {}
  void open(const char*, uint32_t* file) { *file = 0; }
  mp_status submit(const mp_read_request*, uint32_t, mp_ticket* t) {
    *t = 1;
    return MP_OK;
  }
  mp_status wait(mp_ticket) { return MP_ERR_IO; }
  mp_status poll(mp_ticket) { return MP_ERR_IO; }
  void stats(mp_transport_stats*) {}
};

void* create(const mp_transport_vtable* v) {
  void* self = nullptr;
  char err[128];
  REQUIRE(v->create(nullptr, nullptr, &self, err, sizeof err) == MP_OK);
  return self;
}

std::vector<mp_read_request> two_requests() {
  std::vector<mp_read_request> r(2);
  for (size_t i = 0; i < r.size(); ++i) {
    r[i].struct_size = sizeof(mp_read_request);
    r[i].tag = 100 + i;
  }
  return r;
}

}  // namespace

TEST_CASE("threads failing on one instance at once each read their own message from last_error") {
  const mp_transport_vtable* v = mp::transport_vtable<Reporting>();
  void* self = create(v);
  std::vector<std::string> wrong(4);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < 20000 && wrong[size_t(w)].empty(); ++i) {
        const std::string path = "/thread-" + std::to_string(w) + "/file-" + std::to_string(i);
        uint32_t file = 0;
        if (v->open(self, path.c_str(), &file) != MP_ERR_IO) wrong[size_t(w)] = "open did not fail";
        const std::string got = v->last_error(self);
        if (got.find(" cannot open " + path + " ") == std::string::npos) wrong[size_t(w)] = path + " read: " + got;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& w : wrong) CHECK(w == "");
  v->destroy(self);
}

TEST_CASE("a status thrown inside a call reaches the caller unchanged, through the handle too") {
  const mp_transport_vtable* v = mp::transport_vtable<Reporting>();
  void* self = create(v);
  mp_read_request r = two_requests()[0];
  r.length = 13;
  mp_ticket t = 0;
  CHECK(v->submit(self, &r, 1, &t) == MP_ERR_INTERNAL);
  CHECK(std::string(v->last_error(self)) == "submit: an internal error");
  v->destroy(self);

  const mp_component_descriptor d = mp::make_transport_descriptor<Reporting>("reporting", "1", "test", MP_CAP_CPU);
  mp::TransportHandle h = mp::TransportHandle::create(d, nullptr, nullptr, nullptr);
  try {
    h.submit({&r, 1});
    FAIL("submit succeeded");
  } catch (const mp::PluginError& e) {
    CHECK(e.status() == MP_ERR_INTERNAL);
  }
}

TEST_CASE("wait_result names the failed request and its tag; the handle's error carries them") {
  const mp_transport_vtable* v = mp::transport_vtable<Reporting>();
  REQUIRE(mp::reports_failed_requests(v));
  void* self = create(v);
  std::vector<mp_read_request> requests = two_requests();
  mp_ticket t = 0;
  REQUIRE(v->submit(self, requests.data(), 2, &t) == MP_OK);
  mp_ticket_result r = mp::no_failed_request();
  CHECK(v->wait_result(self, t, &r) == MP_ERR_DEVICE);
  CHECK(r.failed_request == 1);
  CHECK(r.failed_tag == 101);
  CHECK(r.failed_count == 1);
  mp_ticket_result zero{};  // struct_size 0: refused before the ticket is touched
  CHECK(v->wait_result(self, t, &zero) == MP_ERR_INVALID_ARG);
  CHECK(zero.failed_tag == 0);
  v->destroy(self);

  const mp_component_descriptor d = mp::make_transport_descriptor<Reporting>("reporting", "1", "test", MP_CAP_CPU);
  mp::TransportHandle h = mp::TransportHandle::create(d, nullptr, nullptr, nullptr);
  const mp_ticket ticket = h.submit(requests);
  try {
    h.wait(ticket);
    FAIL("wait succeeded");
  } catch (const mp::TicketError& e) {
    CHECK(e.status() == MP_ERR_DEVICE);
    CHECK(e.result().failed_tag == 101);
  }
}

TEST_CASE("a class written for 1.3 still builds; its wait_result names no request") {
  const mp_transport_vtable* v = mp::transport_vtable<Older>();
  void* self = create(v);
  mp_ticket t = 0;
  REQUIRE(v->submit(self, nullptr, 0, &t) == MP_OK);
  mp_ticket_result r{};
  r.struct_size = sizeof r;
  r.failed_request = 5;
  CHECK(v->wait_result(self, t, &r) == MP_ERR_IO);
  CHECK(r.failed_request == MP_NO_REQUEST);
  CHECK(v->wait(self, t) == MP_ERR_IO);
  v->destroy(self);
}

TEST_CASE("an output struct is written up to the caller's struct_size only; 0 is refused") {
  const mp_transport_vtable* v = mp::transport_vtable<Reporting>();
  void* self = create(v);
  // A caller that knows `requests` only.
  const mp_transport_stats s = moepage::test::check_output_struct<mp_transport_stats>(
      [&](mp_transport_stats* out) { return v->stats(self, out); }, offsetof(mp_transport_stats, bytes_read));
  CHECK(s.requests == 11);
  CHECK(std::string(v->last_error(self)).find("struct_size (0)") != std::string::npos);
  v->destroy(self);
}

TEST_CASE("option values from a newer host (larger elements) are found with its stride") {
  struct Wider {
    mp_option_value v;
    uint64_t newer_field;
  };
  const Wider values[] = {{{sizeof(Wider), "threads", "4"}, 0xDEAD}, {{sizeof(Wider), "policy", "lfu"}, 0xBEEF}};
  const mp_options raw{sizeof(mp_options), 2, &values[0].v};
  const mp::Options o(&raw);
  CHECK(o.get_int("threads") == 4);
  CHECK(o.get_string("policy") == "lfu");
}
