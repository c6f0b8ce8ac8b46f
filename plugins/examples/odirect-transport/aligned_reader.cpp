#include "aligned_reader.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace odirect {
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
    uint64_t got = 0;
    // Short reads are continued; a read that returns 0 is the end of the file.
    while (got < window) {
      const ssize_t n = ::pread(a.fd, a.bounce + got, window - got, static_cast<off_t>(pos + got));
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        if (errno_value != nullptr) *errno_value = err;
        out.status = MP_ERR_IO;
        out.message = range_text(a) + " failed at offset " + std::to_string(pos + got) + ": " + std::strerror(err);
        return out;
      }
      if (n == 0) break;
      got += static_cast<uint64_t>(n);
      out.bytes_from_disk += static_cast<uint64_t>(n);
      // O_DIRECT may return fewer bytes only at the end of the file; the next read returns 0.
      if ((got & mask) != 0) break;
    }
    // The part of this window that belongs to the request.
    const uint64_t want_from = std::max(pos, a.offset);
    const uint64_t want_to = std::min(window_end, end);
    if (pos + got < want_to) {
      out.status = MP_ERR_IO;
      out.message = range_text(a) + ": the file ends at offset " + std::to_string(pos + got) +
                    ", before the range does";
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
