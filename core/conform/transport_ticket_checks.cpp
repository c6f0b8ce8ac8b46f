// Transport checks of tickets: poll until done, ticket 0 and retired tickets, two waiters on one
// ticket, and which request of a failed ticket failed (ABI 1.4 wait_result).
#include <chrono>
#include <future>
#include <thread>

#include "conform/transport_fixture.hpp"
#include "moepage/cpp/ticket.hpp"

namespace moepage::conform {
namespace {

void poll_until_done(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<Read> reads = ctx.reads(8, 256 * 1024);
  const mp_ticket ticket = submit(t, reads, f);
  expect(ticket != 0, "submit returned ticket 0, which is never valid");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!t.poll(ticket)) {
    expect(std::chrono::steady_clock::now() < deadline, "poll still reports pending after 20 s");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  verify_all(reads, ctx.file, "polled");
  for (const char* op : {"wait", "poll"}) {
    const bool wait = std::string(op) == "wait";
    mp::PluginError e = expect_plugin_failure([&] { wait ? t.wait(0) : (void)t.poll(0); }, std::string(op) + "(0)");
    expect(e.status() == MP_ERR_INVALID_ARG, std::string(op) + "(0): status " + mp_status_name(e.status()));
    e = expect_plugin_failure([&] { wait ? t.wait(ticket) : (void)t.poll(ticket); },
                              std::string(op) + " of a ticket already reported");
    expect(e.status() == MP_ERR_INVALID_ARG,
           std::string(op) + " of a reported ticket: status " + mp_status_name(e.status()));
  }
}

// Two threads wait for one ticket: exactly one gets the result, the other invalid-arg, and
// neither blocks forever.
void two_waiters(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  for (int round = 0; round < 10; ++round) {
    std::vector<Read> reads = ctx.reads(32, 128 * 1024);
    const mp_ticket ticket = submit(t, reads, f);
    auto waiter = [&t, ticket]() -> mp_status {
      try {
        t.wait(ticket);
        return MP_OK;
      } catch (const mp::PluginError& e) {
        return e.status();
      }
    };
    std::future<mp_status> a = std::async(std::launch::async, waiter);
    std::future<mp_status> b = std::async(std::launch::async, waiter);
    for (std::future<mp_status>* w : {&a, &b})
      expect(w->wait_for(std::chrono::seconds(20)) == std::future_status::ready,
             "a second wait on one ticket blocked for 20 s");
    const mp_status sa = a.get(), sb = b.get();
    expect((sa == MP_OK && sb == MP_ERR_INVALID_ARG) || (sa == MP_ERR_INVALID_ARG && sb == MP_OK),
           "two waiters on one ticket got " + std::string(mp_status_name(sa)) + " and " + mp_status_name(sb) +
               "; expected ok for one and invalid-arg for the other");
    verify_all(reads, ctx.file, "two waiters");
  }
}

// A batch whose one bad request lies past the end of the file, among good ones: the failed
// ticket names that request (index and tag); a good ticket names none.
void names_failed_request(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<Read> reads = ctx.reads(6, 4096);
  reads.emplace_back(kTransportFileBytes - 10, 100, 0);  // fails: 90 bytes past the end
  reads.push_back(ctx.reads(1, 4096)[0]);
  const uint32_t bad = static_cast<uint32_t>(reads.size() - 2);
  std::vector<mp_read_request> requests;
  for (Read& r : reads) requests.push_back(r.request(f));
  const mp::TicketError e = expect_failure<mp::TicketError>([&] { t.wait(t.submit(requests)); }, "the batch");
  const mp_ticket_result& r = e.result();
  expect(r.failed_request == bad,
         "the failed ticket names request " +
             (r.failed_request == MP_NO_REQUEST ? std::string("none") : std::to_string(r.failed_request)) +
             ", the one past the end is " + std::to_string(bad));
  expect(r.failed_tag == requests[bad].tag, "failed_tag is " + std::to_string(r.failed_tag) +
                                                ", the request's tag is " + std::to_string(requests[bad].tag));
  expect(r.failed_count == 1, "failed_count is " + std::to_string(r.failed_count) + " for one failed request");
  mp_ticket_result good = mp::no_failed_request();
  good.failed_request = 7;  // must be overwritten
  mp_ticket ok = t.submit({requests.data(), 2});
  expect(ctx.vtable().wait_result(t.ref().self, ok, &good) == MP_OK, "a good ticket failed");
  expect(good.failed_request == MP_NO_REQUEST && good.failed_count == 0,
         "a good ticket reports failed request " + std::to_string(good.failed_request));
}

bool reports_failures(const TransportContext& ctx) {
  return ctx.component.abi_minor >= 4 || mp::reports_failed_requests(&ctx.vtable());
}

}  // namespace

std::vector<TransportCheck> transport_ticket_checks() {
  return {
      {"poll reports pending or ok until done; ticket 0 and a reported ticket are errors, not hangs", &poll_until_done},
      {"two threads waiting for one ticket: one gets its result, the other invalid-arg, neither hangs", &two_waiters,
       4},
      {"a failed ticket names the failed request's index and tag (wait_result, ABI 1.4)", &names_failed_request, 0,
       &reports_failures},
  };
}

}  // namespace moepage::conform
