#include "range_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::transport {

RangeRead read_range(const char* who, int fd, const std::string& path, uint64_t offset, uint64_t length, void* dst) {
  constexpr uint64_t kMaxPerCall = uint64_t{1} << 30;  // Linux caps one read near 2 GiB anyway
  auto* out = static_cast<unsigned char*>(dst);
  uint64_t done = 0;
  while (done < length) {
    const uint64_t want = std::min(length - done, kMaxPerCall);
    const uint64_t at = offset + done;
    if (at > static_cast<uint64_t>(std::numeric_limits<off_t>::max()))
      return {MP_ERR_INVALID_ARG, done, mp::format("{}: {}: offset {} is beyond what the system can address", who, path, at)};
    const ssize_t got = ::pread(fd, out + done, want, static_cast<off_t>(at));
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      return {MP_ERR_IO, done,
              mp::format("{}: {}: read error at offset {} (wanted {} bytes, got {}): {}", who, path, offset, length, done,
                         std::strerror(err))};
    }
    if (got == 0)
      return {MP_ERR_IO, done,
              mp::format("{}: {}: unexpected end of file at offset {} (wanted {} bytes, got {})", who, path, offset,
                         length, done)};
    done += static_cast<uint64_t>(got);
  }
  return {MP_OK, done, {}};
}

FileTable::~FileTable() {
  for (const OpenFile& f : files_) ::close(f.fd);
}

uint32_t FileTable::open(const char* path) {
  if (path == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, who_ + ": open: path is NULL");
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < files_.size(); ++i)
    if (files_[i].path == path) return static_cast<uint32_t>(i);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw mp::Error(MP_ERR_IO, mp::format("{}: cannot open {}: {}", who_, path, std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw mp::Error(MP_ERR_IO, mp::format("{}: cannot read {}: not a regular file", who_, path));
  }
  files_.push_back(OpenFile{fd, path});
  return static_cast<uint32_t>(files_.size() - 1);
}

const OpenFile* FileTable::find(uint32_t handle) const {
  std::lock_guard lock(mutex_);
  return handle < files_.size() ? &files_[handle] : nullptr;
}

size_t FileTable::size() const {
  std::lock_guard lock(mutex_);
  return files_.size();
}

}  // namespace moepage::transport
