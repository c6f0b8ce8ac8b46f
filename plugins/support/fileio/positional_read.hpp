// Positional reads (pread(2)) of a byte range: short reads are continued and EINTR is retried, so
// a transport sees either the whole range, the end of the file, or the system's error.
#pragma once
#include <cstdint>
#include <string>

#include "moepage/status.h"

namespace moepage::fileio {

struct PreadResult {
  uint64_t bytes = 0;  // placed in dst
  int error = 0;       // errno of the read that failed; 0 when the range or the file ended
};

// Reads dst[0, length) from `fd` at `offset` until the range is full, the file ends or a read
// fails. `granule` is for O_DIRECT descriptors: a read that ends off a multiple of it can only be
// the end of the file, and a further read at that unaligned offset would be refused (EINVAL), so
// the loop stops there. An offset past what off_t holds is EOVERFLOW.
PreadResult pread_up_to(int fd, void* dst, uint64_t length, uint64_t offset, uint64_t granule = 1);

struct RangeRead {
  mp_status status = MP_OK;  // MP_OK: every byte read
  uint64_t bytes_read = 0;
  std::string message;  // one line naming `who`, the file, the offset and the length
};

// Fills dst[0, length) from `fd` at `offset`; the end of the file before the range ends is an
// error. `who` ("pread", "pinned-async") and `path` label the message.
RangeRead read_range(const char* who, int fd, const std::string& path, uint64_t offset, uint64_t length, void* dst);

}  // namespace moepage::fileio
