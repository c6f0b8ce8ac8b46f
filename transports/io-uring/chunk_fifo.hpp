// A FIFO of pointers over a ring buffer that only grows, so a steady workload stops allocating
// once it is large enough (std::deque allocates and frees blocks as it moves).
#pragma once
#include <cstddef>
#include <vector>

namespace moepage::uring {

template <class T>
class Fifo {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T front() const { return slots_[head_]; }
  void push(T value) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) % slots_.size()] = value;
    ++size_;
  }
  T pop() {
    T value = slots_[head_];
    head_ = (head_ + 1) % slots_.size();
    --size_;
    return value;
  }
  void clear() { head_ = size_ = 0; }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 64 : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = slots_[(head_ + i) % slots_.size()];
    slots_.swap(bigger);
    head_ = 0;
  }
  std::vector<T> slots_;
  size_t head_ = 0, size_ = 0;
};

}  // namespace moepage::uring
