#include "checkpoint/mapped_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint_error.hpp"

namespace moepage::ckpt {

MappedFile::MappedFile(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw CheckpointError(path_.string() + ": cannot open: " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw CheckpointError(path_.string() + ": not a regular file");
  }
  size_ = uint64_t(st.st_size);
}

MappedFile::~MappedFile() {
  if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::pread_exact(uint64_t offset, std::span<uint8_t> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw CheckpointError(path_.string() + ": short read of " + std::to_string(out.size()) + " bytes at offset " +
                            std::to_string(offset) + (n < 0 ? std::string(": ") + std::strerror(errno) : std::string(": end of file")));
    }
    done += size_t(n);
  }
}

std::span<const uint8_t> MappedFile::mapping() const {
  std::call_once(map_once_, [this] {
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) throw CheckpointError(path_.string() + ": mmap failed: " + std::strerror(errno));
    map_ = static_cast<const uint8_t*>(p);
  });
  return {map_, size_};
}

}  // namespace moepage::ckpt
