// The files an io-uring transport reads, each opened once, with O_DIRECT when the `direct` option
// asks for it and the file system takes it. A direct file carries its alignment: the block size
// offsets and lengths of its reads are rounded to (statx STATX_DIOALIGN, or the file system's block
// size from fstatvfs when the kernel does not say), and the alignment its buffers need.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::uring {

enum class Mode { kAuto, kOn, kOff };
Mode parse_mode(const std::string& text);  // "auto" | "on" | "off", as the option table allows

// A file's O_DIRECT alignment and where it came from ("statx", "fstatvfs").
struct DirectAlignment {
  uint64_t offset = 0;  // file offsets and lengths: a power of two
  uint64_t memory = 0;  // buffer addresses: a power of two
  const char* source = "";
};
// Asks the kernel for `fd`'s direct-I/O alignment; {0, 0} when it cannot tell.
DirectAlignment direct_alignment(int fd);

struct UringFile {
  std::string path;
  int fd = -1;           // what reads use: the O_DIRECT descriptor while `direct`, else the buffered one
  int direct_fd = -1;    // -1 when the file is read through the page cache
  int buffered_fd = -1;  // opened when the file is buffered, or when a direct read is refused (auto)
  bool direct = false;
  uint64_t granule = 1;  // offsets and lengths of this file's reads are multiples of it (1: buffered)
  uint64_t memory_alignment = 1;
};

// Thread-safe; entries never move, so queued reads may point at them. Which descriptor a file's
// reads use changes only under the caller's lock (fall_back_to_buffered).
class UringFiles {
 public:
  // `window` is the staging buffer size: a direct file's block must divide it, and its buffer
  // alignment must not exceed `buffer_alignment`.
  UringFiles(Mode direct, uint64_t window, uint64_t buffer_alignment, mp::HostLog log)
      : mode_(direct), window_(window), buffer_alignment_(buffer_alignment), log_(std::move(log)) {}
  ~UringFiles();
  UringFiles(const UringFiles&) = delete;
  UringFiles& operator=(const UringFiles&) = delete;

  // The handle of `path`, opening it on first use. Throws mp::Error naming the file.
  uint32_t open(const char* path);
  UringFile* find(uint32_t handle);
  size_t size() const;
  // After a direct read of `f` failed with `error` (EINVAL: the file system cannot do it after all;
  // EFAULT: the kernel cannot pin the staging memory for it) under direct: auto: reads of it go
  // through the page cache from now on (aligned windows already planned stay valid). Returns false
  // (nothing changed) under direct: on, or when the file cannot be opened again.
  bool fall_back_to_buffered(UringFile& f, int error);

 private:
  // Why `fd` cannot be read with O_DIRECT through our buffers, or empty when it can; fills `f`'s alignment.
  std::string direct_problem(int fd, UringFile& f) const;
  void note_buffered(const std::string& path, const std::string& why);

  const Mode mode_;
  const uint64_t window_, buffer_alignment_;
  const mp::HostLog log_;
  mutable std::mutex mutex_;
  std::deque<UringFile> files_;  // deque: open() never moves a file a queued read points to
  bool told_buffered_ = false;   // the one info line about falling back was written
};

}  // namespace moepage::uring
