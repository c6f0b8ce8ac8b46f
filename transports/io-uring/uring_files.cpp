#include "uring_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "aligned_windows.hpp"

namespace moepage::uring {

namespace {

constexpr uint64_t kMinBlock = 512;
constexpr uint64_t kMaxBlock = uint64_t{1} << 16;

[[noreturn]] void open_failed(const char* path, int err) {
  throw mp::Error(MP_ERR_IO, mp::format("io-uring: cannot open {}: {}", path, std::strerror(err)));
}

}  // namespace

Mode parse_mode(const std::string& text) {
  if (text == "on") return Mode::kOn;
  if (text == "off") return Mode::kOff;
  return Mode::kAuto;
}

DirectAlignment direct_alignment(int fd) {
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) != 0 &&
      sx.stx_dio_offset_align != 0) {
    return {sx.stx_dio_offset_align, sx.stx_dio_mem_align == 0 ? 1u : sx.stx_dio_mem_align, "statx"};
  }
  // Kernels before 6.1 (and file systems that do not fill STATX_DIOALIGN) leave it to us: the file
  // system's block size is a multiple of the device's logical block, so it is always safe.
  struct statvfs vfs {};
  if (::fstatvfs(fd, &vfs) == 0 && is_power_of_two(vfs.f_bsize) && vfs.f_bsize >= kMinBlock &&
      vfs.f_bsize <= kMaxBlock) {
    return {vfs.f_bsize, vfs.f_bsize, "fstatvfs"};
  }
  return {};
}

UringFiles::~UringFiles() {
  for (const UringFile& f : files_) {
    if (f.direct_fd >= 0) ::close(f.direct_fd);
    if (f.buffered_fd >= 0) ::close(f.buffered_fd);
  }
}

std::string UringFiles::direct_problem(int fd, UringFile& f) const {
  const DirectAlignment a = direct_alignment(fd);
  if (a.offset == 0) return "the kernel reports no direct-I/O alignment for it";
  if (!is_power_of_two(a.offset) || window_ % a.offset != 0)
    return mp::format("its direct-I/O block of {} bytes does not divide buffer_size ({} bytes)", a.offset, window_);
  if (!is_power_of_two(a.memory) || a.memory > buffer_alignment_)
    return mp::format("it wants buffers aligned to {} bytes, more than the staging buffers' {}", a.memory,
                      buffer_alignment_);
  f.granule = a.offset;
  f.memory_alignment = a.memory;
  log_.debug("{}: O_DIRECT, reads aligned to {} bytes, buffers to {} ({})", f.path, a.offset, a.memory, a.source);
  return {};
}

void UringFiles::note_buffered(const std::string& path, const std::string& why) {
  // One info line per instance: a sharded checkpoint would otherwise say it once per shard.
  if (!told_buffered_) {
    told_buffered_ = true;
    log_.info("{}: {}; reading it (and any other such file) through the page cache (direct: auto)", path, why);
  } else {
    log_.debug("{}: {}; reading it through the page cache", path, why);
  }
}

uint32_t UringFiles::open(const char* path) {
  if (path == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "io-uring: open: path is NULL");
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < files_.size(); ++i)
    if (files_[i].path == path) return static_cast<uint32_t>(i);

  struct stat st {};
  if (::stat(path, &st) != 0) open_failed(path, errno);
  if (S_ISDIR(st.st_mode)) open_failed(path, EISDIR);
  UringFile f;
  f.path = path;
  if (mode_ != Mode::kOff) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    const int err = errno;
    std::string problem;
    if (fd < 0 && err != EINVAL) open_failed(path, err);
    if (fd < 0) problem = "the file system refuses O_DIRECT";
    if (fd >= 0) {
      problem = direct_problem(fd, f);
      if (problem.empty()) {
        f.direct_fd = f.fd = fd;
        f.direct = true;
      } else {
        ::close(fd);
      }
    }
    if (!problem.empty() && mode_ == Mode::kOn)
      throw mp::Error(MP_ERR_UNSUPPORTED, mp::format("io-uring: {}: {} (direct: on; direct: auto reads such files "
                                                     "through the page cache)",
                                                     path, problem));
    if (!problem.empty()) note_buffered(path, problem);
  }
  if (!f.direct) {
    f.buffered_fd = f.fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (f.fd < 0) open_failed(path, errno);
  }
  files_.push_back(std::move(f));
  return static_cast<uint32_t>(files_.size() - 1);
}

UringFile* UringFiles::find(uint32_t handle) {
  std::lock_guard lock(mutex_);
  return handle < files_.size() ? &files_[handle] : nullptr;
}

size_t UringFiles::size() const {
  std::lock_guard lock(mutex_);
  return files_.size();
}

bool UringFiles::fall_back_to_buffered(UringFile& f, int error) {
  if (mode_ != Mode::kAuto) return false;
  std::lock_guard lock(mutex_);
  if (!f.direct) return true;
  if (f.buffered_fd < 0) {
    f.buffered_fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f.buffered_fd < 0) return false;
  }
  f.fd = f.buffered_fd;
  f.direct = false;
  f.granule = f.memory_alignment = 1;  // requests planned from now on read exactly their bytes
  note_buffered(f.path, mp::format("an O_DIRECT read of it failed ({})", std::strerror(error)));
  return true;
}

}  // namespace moepage::uring
