// A read-only checkpoint file: a descriptor for positional reads, and the identity (device,
// inode, size, modification time) the file had when it was opened. Nothing is mapped: a mapping
// of a file that another process truncates or rewrites turns the next access into SIGBUS, so
// dense tensors are read into memory (see Checkpoint::view) and experts are read into slots.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace moepage::ckpt {

// What identifies one version of a file: a rewrite in place changes size or mtime, a replacement
// (rename over it) changes the inode.
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

class MappedFile {
 public:
  // Opens the file; throws CheckpointError naming the path when it cannot or when it is not a
  // regular file (a device or FIFO would block or never end).
  explicit MappedFile(std::filesystem::path path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint64_t size() const { return identity_.size; }
  int fd() const { return fd_; }
  const FileIdentity& identity() const { return identity_; }

  // Reads exactly out.size() bytes at `offset`; throws CheckpointError on a short read (saying
  // so when the file changed since it was opened).
  void pread_exact(uint64_t offset, std::span<uint8_t> out) const;

  // Empty when the file at path() is still the one opened, unchanged; otherwise what differs
  // ("replaced", "size 10 -> 4", "modified"), for an error message.
  std::string change_since_open() const;
  // Throws CheckpointError naming the file and the change when change_since_open() is not empty.
  void check_unchanged() const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  FileIdentity identity_;
};

}  // namespace moepage::ckpt
