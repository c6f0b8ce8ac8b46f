// The open-file table behind a transport's open(): one descriptor per distinct path, handles are
// indices, and a handle's entry never moves, so queued reads may point at it. Shared by the
// pread, pinned-async and fault-inject transports; their range reads are moepage::fileio's.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

namespace moepage::transport {

struct OpenFile {
  int fd = -1;
  std::string path;
};

// The files a transport opened. Thread-safe. open() throws mp::Error naming `who` and the path
// when a file cannot be opened, cannot be stat'ed or is a directory.
class FileTable {
 public:
  explicit FileTable(std::string who) : who_(std::move(who)) {}
  ~FileTable();
  FileTable(const FileTable&) = delete;
  FileTable& operator=(const FileTable&) = delete;

  uint32_t open(const char* path);
  // nullptr for an unknown handle. The pointer stays valid while the table lives.
  const OpenFile* find(uint32_t handle) const;
  size_t size() const;

 private:
  std::string who_;
  mutable std::mutex mutex_;
  std::deque<OpenFile> files_;  // deque: open() never moves a file a queued job points to
};

}  // namespace moepage::transport
