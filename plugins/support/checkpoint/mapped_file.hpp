// A read-only file: a descriptor for positional reads plus, on demand, one private read-only
// mapping of the whole file (dense tensors are viewed through it; experts are never read
// through it, they are read with pread into their slots).
#pragma once
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <span>

namespace moepage::ckpt {

class MappedFile {
 public:
  // Opens the file; throws CheckpointError naming the path when it cannot.
  explicit MappedFile(std::filesystem::path path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }

  // Reads exactly out.size() bytes at `offset`; throws CheckpointError on a short read.
  void pread_exact(uint64_t offset, std::span<uint8_t> out) const;

  // The whole file, mapped MAP_PRIVATE|PROT_READ on first use (thread-safe), kept until destruction.
  std::span<const uint8_t> mapping() const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  mutable std::once_flag map_once_;
  mutable const uint8_t* map_ = nullptr;
};

}  // namespace moepage::ckpt
