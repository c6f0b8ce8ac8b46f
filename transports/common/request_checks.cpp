#include "request_checks.hpp"

#include "moepage/cpp/error.hpp"

namespace moepage::transport {

void check_read_request(const mp_read_request& r, uint32_t i, const RequestContext& c) {
  if (!c.known_file)
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("{}: request {}: unknown file handle {} (opened: {})", c.who, i, r.file, c.files_open));
  if (r.length > 0 && r.dst == nullptr)
    throw mp::Error(MP_ERR_INVALID_ARG, mp::format("{}: request {}: dst is NULL", c.who, i));
  if (r.offset + r.length < r.offset || r.dst_offset + r.length < r.dst_offset)
    throw mp::Error(MP_ERR_INVALID_ARG, mp::format("{}: request {}: offset + length overflows", c.who, i));
  if (r.dst_kind != MP_MEM_HOST && r.dst_kind != MP_MEM_DEVICE)
    throw mp::Error(MP_ERR_INVALID_ARG, mp::format("{}: request {}: unknown dst_kind {}", c.who, i, r.dst_kind));
  if (r.priority != MP_READ_DEMAND && r.priority != MP_READ_PREFETCH)
    throw mp::Error(MP_ERR_INVALID_ARG, mp::format("{}: request {}: unknown priority {}", c.who, i, r.priority));
  if (r.dst_kind == MP_MEM_DEVICE && r.length > 0 && !c.device_copies)
    throw mp::Error(MP_ERR_UNSUPPORTED,
                    mp::format("{}: request {}: device destination, but the host offers no device copies", c.who, i));
}

}  // namespace moepage::transport
