// Positional reads of an exact byte range, shared by the pinned-async and fault-inject
// transports: short reads are continued, EINTR is retried, and anything else (an I/O error, the
// end of the file before the range ends) is a one-line message naming the file, the offset and
// the length. Also the open() both transports use: one descriptor per distinct path.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "moepage/status.h"

namespace moepage::transport {

struct RangeRead {
  mp_status status = MP_OK;  // MP_OK: every byte read
  uint64_t bytes_read = 0;
  std::string message;
};

// Fills dst[0, length) from `fd` at `offset`; `who` ("pinned-async") and `path` label messages.
RangeRead read_range(const char* who, int fd, const std::string& path, uint64_t offset, uint64_t length, void* dst);

struct OpenFile {
  int fd = -1;
  std::string path;
};

// The files a transport opened; handles are indices. Thread-safe. Throws mp::Error naming the
// path when a file cannot be opened or is a directory.
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
