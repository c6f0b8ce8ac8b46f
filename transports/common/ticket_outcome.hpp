// How one ticket of a transport ends: ok, or its first failure (status, message, and which
// request failed, ABI 1.4's wait_result). Shared by the pread and pinned-async transports; the
// caller guards it with the ticket's lock.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "moepage/cpp/error.hpp"
#include "moepage/moepage.h"

namespace moepage::transport {

struct TicketOutcome {
  mp_status status = MP_OK;
  std::string error;
  uint32_t failed_request = MP_NO_REQUEST;  // the request whose error is the ticket's
  uint64_t failed_tag = 0;

  // For a reused ticket slot: ok again (the message keeps its capacity).
  void reset() {
    status = MP_OK;
    error.clear();
    failed_request = MP_NO_REQUEST;
    failed_tag = 0;
  }
  // A chunk of request `request` failed; the first failure becomes the ticket's, its message
  // marked with the request's tag when it has one.
  void record_failure(mp_status s, std::string message, uint32_t request, uint64_t tag) {
    if (status != MP_OK) return;
    status = s;
    error = std::move(message);
    if (tag != 0) error += mp::format(" [tag {}]", tag);
    failed_request = request;
    failed_tag = tag;
  }
  // Says which request failed in `result` (failed_count is the transport's to fill).
  void describe(mp_ticket_result& result) const {
    result.failed_request = failed_request;
    result.failed_tag = failed_tag;
  }
};

}  // namespace moepage::transport
