// Reads an exact byte range of a file with pread(2): short reads are continued, EINTR is retried,
// and anything else (an I/O error, the end of the file before the range ends) is a one-line
// message naming the file, the offset and the length.
#pragma once
#include <cstdint>
#include <string>

#include "moepage/status.h"

namespace moepage::pread {

struct ReadFailure {
  mp_status status = MP_OK;  // MP_OK: all bytes read
  uint64_t bytes_read = 0;   // bytes placed in dst before the failure
  std::string message;
};

// Fills dst[0, length) from `fd` at `offset`. `path` only labels messages.
ReadFailure read_exact(int fd, const std::string& path, uint64_t offset, uint64_t length, void* dst);

}  // namespace moepage::pread
