// Reads an arbitrary byte range of a file through a descriptor opened with O_DIRECT.
//
// O_DIRECT needs the file offset, the length and the memory address of every read to be
// multiples of the device's logical block size. Expert segments start anywhere, so each read is
// widened to whole aligned blocks, done into an aligned bounce buffer, and the requested bytes
// are copied out. A range larger than the bounce buffer is done in several windows.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "moepage/status.h"

namespace odirect {

struct WindowResult {
  mp_status status = MP_OK;
  uint64_t bytes_from_disk = 0;  // including the alignment padding
  std::string message;           // one line naming file, offset and length when status != MP_OK
};

// Delivers `bytes` bytes that belong at `range_offset` bytes into the requested range.
using Sink =
    std::function<mp_status(uint64_t range_offset, const unsigned char* bytes, uint64_t count, std::string& error)>;

struct AlignedReadArgs {
  int fd = -1;
  const std::string* path = nullptr;  // for messages
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t alignment = 4096;        // power of two
  unsigned char* bounce = nullptr;  // aligned to `alignment`
  uint64_t bounce_bytes = 0;        // multiple of `alignment`
};

// Reads [offset, offset + length) and hands it to `sink` window by window. A read that ends
// before the range does (end of file) or fails is an MP_ERR_IO naming the file, offset and length;
// EINVAL is reported as errno_value so the caller can fall back to buffered reads.
WindowResult read_aligned(const AlignedReadArgs& args, const Sink& sink, int* errno_value);

}  // namespace odirect
