// moepage plugin SDK: waiting for a transport's ticket and learning which request failed, for
// anything that drives a transport (pagers, the host). Through wait_result/poll_result when the
// transport has them (ABI 1.4), else through wait/poll, which name no request.
#pragma once

#include "moepage/moepage.h"

namespace mp {

// True when the transport says which request of a failed ticket failed.
inline bool reports_failed_requests(const mp_transport_vtable* v) noexcept {
  return MP_HAS_FIELD(v, mp_transport_vtable, poll_result) && v->wait_result != nullptr && v->poll_result != nullptr;
}

// A result that names no request: what a transport older than 1.4 leaves.
inline mp_ticket_result no_failed_request() noexcept {
  mp_ticket_result r{};
  r.struct_size = sizeof r;
  r.failed_request = MP_NO_REQUEST;
  return r;
}

// wait() (poll = false) or poll() of `ticket` on transport instance `self`; `result` is filled
// when the transport reports it, and names no request otherwise.
inline mp_status report_ticket(const mp_transport_vtable* v, void* self, mp_ticket ticket, bool poll,
                               mp_ticket_result& result) noexcept {
  result = no_failed_request();
  if (reports_failed_requests(v)) return (poll ? v->poll_result : v->wait_result)(self, ticket, &result);
  return (poll ? v->poll : v->wait)(self, ticket);
}

}  // namespace mp
