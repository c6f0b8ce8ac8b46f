#include "read_progress.hpp"

#include <cerrno>

namespace moepage::uring {

Next ReadProgress::apply(int32_t res) {
  if (res == -EINTR || res == -EAGAIN) {
    if (++retries > kMaxRetries) {
      error = -res;
      return Next::kError;
    }
    return Next::kContinue;
  }
  if (res < 0) {
    error = -res;
    // EINVAL: the file system takes O_DIRECT at open but not for this read. EFAULT: the kernel
    // cannot pin the buffer for direct I/O (pinned memory some GPU drivers map specially).
    return (error == EINVAL || error == EFAULT) && granule > 1 ? Next::kDirectRefused : Next::kError;
  }
  retries = 0;
  if (res == 0) return landed >= want_end ? Next::kDone : Next::kEndOfFile;
  const uint64_t left = read_length - landed;
  landed += static_cast<uint64_t>(res) < left ? static_cast<uint64_t>(res) : left;
  if (landed >= want_end) return Next::kDone;
  // O_DIRECT reads stop off a block boundary only at the end of the file; reading on from there
  // would be refused as unaligned.
  if (granule > 1 && landed % granule != 0) return Next::kEndOfFile;
  return Next::kContinue;
}

}  // namespace moepage::uring
