// What one completion means for one window read (a CQE's `res`): the read is done, must go on
// for the rest of the window (a short read), must be sent again (EINTR, EAGAIN), hit the end of
// the file, or failed. Kept apart from the ring so every case is testable with made-up results.
#pragma once
#include <cstdint>

namespace moepage::uring {

// Consecutive EINTR/EAGAIN completions of one window before it counts as failed.
inline constexpr uint32_t kMaxRetries = 64;

enum class Next {
  kDone,           // every requested byte of the window has landed
  kContinue,       // send the read again for [landed, read_length) of the window
  kEndOfFile,      // the file ended before the requested bytes did
  kError,          // the read failed with `error` (an errno value)
  kDirectRefused,  // an O_DIRECT read was refused (EINVAL): the file system or the alignment is wrong
};

struct ReadProgress {
  uint64_t read_length = 0;  // bytes the window reads
  uint64_t want_end = 0;     // bytes of the window up to the last requested one (<= read_length)
  uint64_t granule = 1;      // the O_DIRECT block size; 1 for buffered reads
  uint64_t landed = 0;       // bytes of the window read so far
  uint32_t retries = 0;      // EINTR/EAGAIN in a row
  int error = 0;             // errno of the failure, for kError and kDirectRefused

  // Applies one completion result (bytes read, or -errno) and says what to do next.
  Next apply(int32_t res);
};

}  // namespace moepage::uring
