#include "positional_read.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::pread {

ReadFailure read_exact(int fd, const std::string& path, uint64_t offset, uint64_t length, void* dst) {
  // One pread moves at most this much; Linux caps a single read near 2 GiB anyway.
  constexpr uint64_t kMaxPerCall = uint64_t{1} << 30;
  auto* out = static_cast<unsigned char*>(dst);
  uint64_t done = 0;
  while (done < length) {
    const uint64_t want = std::min(length - done, kMaxPerCall);
    const uint64_t at = offset + done;
    if (at > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
      return {MP_ERR_INVALID_ARG, done,
              mp::format("pread: {}: offset {} is beyond what the system can address", path, at)};
    }
    const ssize_t got = ::pread(fd, out + done, want, static_cast<off_t>(at));
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      return {MP_ERR_IO, done,
              mp::format("pread: {}: read error at offset {} (wanted {} bytes, got {}): {}", path, offset, length, done,
                         std::strerror(err))};
    }
    if (got == 0) {
      return {MP_ERR_IO, done,
              mp::format("pread: {}: unexpected end of file at offset {} (wanted {} bytes, got {})", path, offset,
                         length, done)};
    }
    done += static_cast<uint64_t>(got);
  }
  return {MP_OK, done, {}};
}

}  // namespace moepage::pread
