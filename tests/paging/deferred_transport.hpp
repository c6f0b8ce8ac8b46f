// A transport that reads nothing until asked, for the paged pager's tests of what is in place
// when: a ticket's bytes land when the pager asks for its event (as pinned-async issues a ticket's
// copies before recording its event) or waits for it; a poll alone lands nothing. And a bench of
// the paged pager over it (the split acquire's and residency's tests).
#pragma once
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "moepage/cpp/plugin_adapter.hpp"
#include "paging_fixture.hpp"

namespace moepage::test {

// What the test sets and reads of the one DeferredTransport instance alive at a time.
struct DeferredControl {
  bool events = true;          // offer ticket_event
  uint64_t fail_offset = 0;    // a request whose range holds this offset fails (0: none)
  uint32_t tickets = 0;        // tickets submitted
  uint32_t events_handed = 0;  // ticket_event calls answered with an event
  uint32_t reads = 0;          // requests whose bytes were placed
};
inline DeferredControl g_control;

class DeferredTransport {
 public:
  DeferredTransport(const mp_host_api*, const mp::Options&) {}
  ~DeferredTransport() {
    for (auto& [handle, fd] : fds_) ::close(fd);
  }

  mp_status open(const char* path, uint32_t* file) {
    const int fd = ::open(path, O_RDONLY);
    if (fd < 0) throw mp::Error(MP_ERR_IO, std::string("deferred: cannot open ") + path);
    *file = next_file_;
    fds_[next_file_] = fd;
    paths_[next_file_++] = path;
    return MP_OK;
  }
  // Each destination is scrubbed at once (a transport may write it any time before the ticket
  // completes), so bytes a test sees there before they land are never left over from an earlier
  // case that used the same memory for the same expert.
  mp_status submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket) {
    for (uint32_t i = 0; i < n; ++i)
      if (requests[i].dst != nullptr)
        std::memset(static_cast<uint8_t*>(requests[i].dst) + requests[i].dst_offset, 0xA5, requests[i].length);
    *ticket = ++next_ticket_;
    tickets_[*ticket] = Ticket{std::vector<mp_read_request>(requests, requests + n)};
    ++g_control.tickets;
    return MP_OK;
  }
  mp_status ticket_event(mp_ticket ticket, mp_event* out) {
    if (!g_control.events) throw mp::Error(MP_ERR_UNSUPPORTED, "deferred: no events today");
    land(find(ticket));
    ++g_control.events_handed;
    *out = reinterpret_cast<mp_event>(uintptr_t(0x1000) + ticket);  // never dereferenced on the CPU
    return MP_OK;
  }
  mp_status wait(mp_ticket ticket, mp_ticket_result* result) {
    Ticket& t = find(ticket);
    land(t);
    const Ticket done = t;
    tickets_.erase(ticket);
    if (done.failed == MP_NO_REQUEST) return MP_OK;
    const mp_read_request& r = done.requests[done.failed];
    result->failed_request = done.failed;
    result->failed_tag = r.tag;
    result->failed_count = 1;
    throw mp::Error(MP_ERR_IO, "deferred: " + paths_[r.file] + ": injected error at offset " +
                                   std::to_string(r.offset) + " (" + std::to_string(r.length) + " bytes)");
  }
  // Pending until something asked for the bytes (an event or a wait): a poll alone lands nothing.
  mp_status poll(mp_ticket ticket, mp_ticket_result* result) {
    if (!find(ticket).landed) return MP_PENDING;
    return wait(ticket, result);
  }
  mp_status stats(mp_transport_stats* out) {
    mp_transport_stats s{};
    s.struct_size = sizeof s;
    mp::write_out(out, s, "deferred: stats");
    return MP_OK;
  }

 private:
  struct Ticket {
    std::vector<mp_read_request> requests;
    bool landed = false;
    uint32_t failed = MP_NO_REQUEST;
  };
  Ticket& find(mp_ticket ticket) {
    const auto it = tickets_.find(ticket);
    if (it == tickets_.end()) throw mp::Error(MP_ERR_INVALID_ARG, "deferred: unknown ticket");
    return it->second;
  }
  // Places the ticket's bytes (once); a request over the failing offset is left unread.
  void land(Ticket& t) {
    if (t.landed) return;
    t.landed = true;
    for (uint32_t i = 0; i < t.requests.size(); ++i) {
      const mp_read_request& r = t.requests[i];
      if (g_control.fail_offset != 0 && g_control.fail_offset >= r.offset &&
          g_control.fail_offset < r.offset + r.length) {
        if (t.failed == MP_NO_REQUEST) t.failed = i;
        continue;
      }
      REQUIRE(::pread(fds_[r.file], static_cast<uint8_t*>(r.dst) + r.dst_offset, r.length, off_t(r.offset)) ==
              ssize_t(r.length));
      ++g_control.reads;
    }
  }

  std::map<uint32_t, int> fds_;
  std::map<uint32_t, std::string> paths_;
  uint32_t next_file_ = 0;
  mp_ticket next_ticket_ = 0;
  std::map<mp_ticket, Ticket> tickets_;
};

// A deferred transport instance, created and destroyed through its vtable as a loaded one would be.
struct Deferred {
  const mp_transport_vtable* v = mp::transport_vtable<DeferredTransport>();
  void* self = nullptr;
  explicit Deferred(DeferredControl control = {}) {
    g_control = control;
    char err[256] = {};
    REQUIRE(v->create(nullptr, nullptr, &self, err, sizeof err) == MP_OK);
  }
  ~Deferred() { v->destroy(self); }
  mp_transport_ref ref() const { return mp_transport_ref{sizeof(mp_transport_ref), v, self}; }
};

// One split acquire's outputs.
struct Started {
  std::vector<void*> slots;
  std::vector<uint8_t> pending;
  mp_acquire_result result{};
};
inline Started start(mp::PagerHandle& pager, uint32_t layer, std::vector<int32_t> experts) {
  Started s;
  s.slots.assign(experts.size(), nullptr);
  s.pending.assign(experts.size(), 7);
  s.result.struct_size = sizeof s.result;
  s.result.slots = s.slots.data();
  s.result.pending = s.pending.data();
  pager.acquire_start(layer, experts, &s.result);
  return s;
}

struct SplitBench {
  CapturingHost host;
  Plugins plugins{host.get()};
  SyntheticCatalog model{4, 8, 2};
  Deferred transport;
  mp::PagerHandle pager;
  explicit SplitBench(uint32_t slots, DeferredControl control = {}, const std::string& name = "paged")
      : transport(control) {
    pager = plugins.pager(name, {{"budget", std::to_string(model.budget_for(slots))}}, model.catalog, transport.ref());
  }
  ~SplitBench() { pager.reset(); }
};

}  // namespace moepage::test
