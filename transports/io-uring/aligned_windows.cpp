#include "aligned_windows.hpp"

#include <algorithm>

namespace moepage::uring {

WindowPlan::WindowPlan(uint64_t offset, uint64_t length, uint64_t align, uint64_t window_bytes)
    : offset_(offset), length_(length), window_(window_bytes) {
  if (length == 0) return;  // a zero-length request reads nothing, wherever it points
  base_ = align_down(offset, align);
  end_ = align_up(offset + length, align);
  count_ = (end_ - base_ + window_ - 1) / window_;
}

Window WindowPlan::at(uint64_t index) const {
  Window w;
  w.read_offset = base_ + index * window_;
  w.read_length = std::min(window_, end_ - w.read_offset);
  w.want_offset = std::max(w.read_offset, offset_);
  w.want_length = std::min(w.read_offset + w.read_length, offset_ + length_) - w.want_offset;
  return w;
}

}  // namespace moepage::uring
