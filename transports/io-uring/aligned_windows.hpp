// The arithmetic of O_DIRECT reads: a request for an arbitrary byte range becomes windows whose
// file range starts and ends on the file's direct-I/O block (what statx calls the offset
// alignment) and fits one staging buffer. The bytes the caller asked for then sit at a known
// offset inside each window, so they are copied (or sent to the device) from there and the padding
// is never delivered. With an alignment of 1 (buffered reads) a window is exactly the bytes asked for.
#pragma once
#include <cstdint>

namespace moepage::uring {

inline bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
// `align` is a power of two. align_up saturates instead of wrapping (callers check overflow first).
inline uint64_t align_down(uint64_t v, uint64_t align) { return v & ~(align - 1); }
inline uint64_t align_up(uint64_t v, uint64_t align) {
  const uint64_t up = v + (align - 1);
  return up < v ? align_down(UINT64_MAX, align) : align_down(up, align);
}

// One read of the file and the part of it that belongs to the request.
struct Window {
  uint64_t read_offset = 0;  // file offset of the read: a multiple of the alignment
  uint64_t read_length = 0;  // bytes to read: a multiple of the alignment, at most the window size
  uint64_t want_offset = 0;  // file offset of the first requested byte inside the read
  uint64_t want_length = 0;  // requested bytes inside the read
  // Bytes from the start of the read to the first requested one (where they land in the buffer).
  uint64_t skip() const { return want_offset - read_offset; }
  // Bytes from the start of the request to the first requested one of this window (where they go in dst).
  uint64_t into_request(uint64_t request_offset) const { return want_offset - request_offset; }
};

// How [offset, offset + length) is cut into windows of at most `window_bytes` aligned bytes.
// `align` is a power of two and divides `window_bytes`; offset + length does not overflow.
class WindowPlan {
 public:
  WindowPlan(uint64_t offset, uint64_t length, uint64_t align, uint64_t window_bytes);
  uint64_t count() const { return count_; }
  Window at(uint64_t index) const;
  // Bytes every window reads together, padding included.
  uint64_t bytes_read() const { return end_ - base_; }

 private:
  uint64_t offset_, length_, window_;
  uint64_t base_ = 0, end_ = 0, count_ = 0;
};

}  // namespace moepage::uring
