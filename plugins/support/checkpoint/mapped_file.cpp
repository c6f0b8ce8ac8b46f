#include "checkpoint/mapped_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <string>

#include "checkpoint/checkpoint_error.hpp"

namespace moepage::ckpt {
namespace {

FileIdentity identity_of(const struct stat& st) {
  return {uint64_t(st.st_dev), uint64_t(st.st_ino), uint64_t(st.st_size),
          int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + int64_t(st.st_mtim.tv_nsec)};
}

}  // namespace

MappedFile::MappedFile(std::filesystem::path path) : path_(std::move(path)) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the regular-file check refuses it.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw CheckpointError(path_.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw CheckpointError(path_.string() + ": not a regular file");
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  identity_ = identity_of(st);
}

MappedFile::~MappedFile() {
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::pread_exact(uint64_t offset, std::span<uint8_t> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      const std::string change = change_since_open();
      throw CheckpointError(path_.string() + ": short read of " + std::to_string(out.size()) + " bytes at offset " +
                            std::to_string(offset) +
                            (n < 0 ? std::string(": ") + std::strerror(err) : std::string(": end of file")) +
                            (change.empty() ? std::string() : " (the file changed while in use: " + change + ")"));
    }
    done += size_t(n);
  }
}

std::string MappedFile::change_since_open() const {
  struct stat now {};
  if (::fstat(fd_, &now) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  const FileIdentity open_one = identity_of(now);
  struct stat named {};
  if (::stat(path_.c_str(), &named) != 0) return "removed";
  const FileIdentity at_path = identity_of(named);
  if (at_path.device != identity_.device || at_path.inode != identity_.inode) return "replaced by another file";
  if (open_one.size != identity_.size) {
    return "size " + std::to_string(identity_.size) + " -> " + std::to_string(open_one.size) + " bytes";
  }
  if (open_one.mtime_ns != identity_.mtime_ns) return "modified";
  return {};
}

void MappedFile::check_unchanged() const {
  const std::string change = change_since_open();
  if (!change.empty()) throw CheckpointError(path_.string() + ": the file changed while in use (" + change + ")");
}

}  // namespace moepage::ckpt
