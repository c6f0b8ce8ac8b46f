#include "file_table.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::transport {

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
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw mp::Error(MP_ERR_IO, mp::format("{}: cannot stat {}: {}", who_, path, std::strerror(err)));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw mp::Error(MP_ERR_IO, mp::format("{}: cannot read {}: it is a directory", who_, path));
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
