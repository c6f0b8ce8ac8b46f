#include "aligned_reader.hpp"

#include <algorithm>
#include <cstring>

#include "fileio/positional_read.hpp"

namespace odirect {
namespace fileio = moepage::fileio;
namespace {

std::string range_text(const AlignedReadArgs& a) {
  return *a.path + ": reading " + std::to_string(a.length) + " bytes at offset " + std::to_string(a.offset);
}

}  // namespace

WindowResult read_aligned(const AlignedReadArgs& a, const Sink& sink, int* errno_value) {
  WindowResult out;
  if (errno_value != nullptr) *errno_value = 0;
  const uint64_t mask = a.alignment - 1;
  const uint64_t end = a.offset + a.length;
  uint64_t pos = a.offset & ~mask;  // first aligned block that holds requested bytes
  while (pos < end) {
    const uint64_t window_end = std::min(pos + a.bounce_bytes, (end + mask) & ~mask);
    const uint64_t window = window_end - pos;
    // Short reads are continued; O_DIRECT returns a short (unaligned) read only at the end of
    // the file, and the loop stops there rather than read again at an unaligned offset.
    const fileio::PreadResult r = fileio::pread_up_to(a.fd, a.bounce, window, pos, a.alignment);
    const uint64_t got = r.bytes;
    out.bytes_from_disk += got;
    if (r.error != 0) {
      if (errno_value != nullptr) *errno_value = r.error;
      out.status = MP_ERR_IO;
      out.message = range_text(a) + " failed at offset " + std::to_string(pos + got) + ": " + std::strerror(r.error);
      return out;
    }
    // The part of this window that belongs to the request.
    const uint64_t want_from = std::max(pos, a.offset);
    const uint64_t want_to = std::min(window_end, end);
    if (pos + got < want_to) {
      out.status = MP_ERR_IO;
      out.message =
          range_text(a) + ": the file ends at offset " + std::to_string(pos + got) + ", before the range does";
      return out;
    }
    std::string error;
    const mp_status s = sink(want_from - a.offset, a.bounce + (want_from - pos), want_to - want_from, error);
    if (s != MP_OK) {
      out.status = s;
      out.message = range_text(a) + ": " + error;
      return out;
    }
    pos = window_end;
  }
  return out;
}

}  // namespace odirect
