// The mapped transport's files: on a GPU, each opened file mapped read-only into the process and
// registered with the device (mp_device_service.register_host, ABI 1.6), so that a device copy
// reads the page cache directly. On the CPU device files are only opened (every read is a pread).
// Registering locks the file's pages in host memory for as long as the transport lives;
// `max_locked` bounds how much it may lock, and a file that would pass the bound is refused at
// open, naming it.
//
// Why map instead of read: a read through pinned staging copies every byte twice through host
// memory (page cache -> staging -> device), and a copy can start only once its chunk is read. A
// registered mapping is one copy that starts at once, at the pinned-copy rate.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "file_table.hpp"
#include "moepage/moepage.h"

namespace moepage::transport {

struct MappedFile {
  const OpenFile* file = nullptr;        // descriptor and path (host reads use pread on it)
  const unsigned char* bytes = nullptr;  // the mapping; nullptr for an empty file or the CPU device
  uint64_t size = 0;                     // the file's size at open
  uint64_t mapped = 0;                   // bytes mapped (size rounded up to pages)
  bool registered = false;               // registered with the device
};

class MappedFiles {
 public:
  // `device`: map each file and register the mapping with it (a GPU device service with
  // register_host); nullptr: open only (the CPU device reads with pread). `max_locked`: bytes the
  // registered mappings may lock in all.
  MappedFiles(const mp_device_service* device, uint64_t max_locked);
  ~MappedFiles();
  MappedFiles(const MappedFiles&) = delete;
  MappedFiles& operator=(const MappedFiles&) = delete;

  // The handle of `path`, mapped (and registered) on its first open. Throws mp::Error naming the
  // file: cannot open, a directory, cannot map, past max_locked, or the device refused it.
  uint32_t open(const char* path);
  // nullptr for an unknown handle; the entry never moves.
  const MappedFile* find(uint32_t handle) const;
  size_t size() const { return table_.size(); }

 private:
  const mp_device_service* device_;
  uint64_t max_locked_, locked_ = 0;
  FileTable table_{"mapped"};
  mutable std::mutex mutex_;
  std::deque<MappedFile> files_;  // [handle]
};

}  // namespace moepage::transport
