// The checks every transport makes on each read request of a batch before it queues any of them
// (transport.h says which status each failure returns), so that a bad batch leaves no half-run
// ticket behind and every transport words the same refusal the same way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "moepage/transport.h"

namespace moepage::transport {

struct RequestContext {
  std::string_view who;        // the transport's name, first in every message
  bool known_file = false;     // the request's file handle names an open file
  size_t files_open = 0;       // how many files are open, for the unknown-handle message
  bool device_copies = false;  // this transport can write into device memory here
};

// Throws mp::Error naming `who` and request `index`: MP_ERR_INVALID_ARG for an unknown file
// handle, a NULL destination with a non-zero length, an offset or destination offset that
// overflows, an unknown dst_kind or priority; MP_ERR_UNSUPPORTED for a device destination the
// transport cannot reach.
void check_read_request(const mp_read_request& r, uint32_t index, const RequestContext& context);

}  // namespace moepage::transport
