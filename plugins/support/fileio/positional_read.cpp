#include "fileio/positional_read.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::fileio {

PreadResult pread_up_to(int fd, void* dst, uint64_t length, uint64_t offset, uint64_t granule) {
  constexpr uint64_t kMaxPerCall = uint64_t{1} << 30;  // Linux caps one read near 2 GiB anyway
  constexpr auto kMaxOffset = static_cast<uint64_t>(std::numeric_limits<off_t>::max());
  auto* out = static_cast<unsigned char*>(dst);
  PreadResult r;
  while (r.bytes < length) {
    const uint64_t at = offset + r.bytes;
    if (at > kMaxOffset) {
      r.error = EOVERFLOW;
      return r;
    }
    const ssize_t got = ::pread(fd, out + r.bytes, std::min(length - r.bytes, kMaxPerCall), static_cast<off_t>(at));
    if (got < 0) {
      if (errno == EINTR) continue;
      r.error = errno;
      return r;
    }
    if (got == 0) return r;
    r.bytes += static_cast<uint64_t>(got);
    if (granule > 1 && r.bytes < length && (r.bytes % granule) != 0) return r;
  }
  return r;
}

RangeRead read_range(const char* who, int fd, const std::string& path, uint64_t offset, uint64_t length, void* dst) {
  const PreadResult r = pread_up_to(fd, dst, length, offset);
  if (r.error == EOVERFLOW && offset + r.bytes > static_cast<uint64_t>(std::numeric_limits<off_t>::max()))
    return {MP_ERR_INVALID_ARG, r.bytes,
            mp::format("{}: {}: offset {} is beyond what the system can address", who, path, offset + r.bytes)};
  if (r.error != 0)
    return {MP_ERR_IO, r.bytes,
            mp::format("{}: {}: read error at offset {} (wanted {} bytes, got {}): {}", who, path, offset, length,
                       r.bytes, std::strerror(r.error))};
  if (r.bytes < length)
    return {MP_ERR_IO, r.bytes,
            mp::format("{}: {}: unexpected end of file at offset {} (wanted {} bytes, got {})", who, path, offset,
                       length, r.bytes)};
  return {MP_OK, r.bytes, {}};
}

}  // namespace moepage::fileio
