// One io_uring instance (liburing), as the transport uses it: submission under the transport's
// lock, completions taken by one thread at a time (the driver), which may block for them while
// other threads submit. io_uring allows that split: the submission and completion queues are
// separate rings, and the kernel takes its own lock for each.
#pragma once
#include <liburing.h>
#include <sys/uio.h>

#include <cstdint>
#include <span>

namespace moepage::uring {

class Ring {
 public:
  // `entries` submission queue entries (the kernel rounds up to a power of two); `sqpoll` asks
  // for a kernel thread that polls the submission queue. Throws mp::Error naming the option.
  Ring(uint32_t entries, bool sqpoll);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Registers the buffers for read_fixed (buffer index = position in `buffers`). Returns 0 or
  // the errno that refused them (memlock limit, memory the kernel cannot pin long-term, ...).
  int register_buffers(std::span<const iovec> buffers);
  bool buffers_registered() const { return registered_; }

  // A free submission entry, or nullptr when the queue is full. Fill it with one of the prep_*.
  io_uring_sqe* next_sqe() { return io_uring_get_sqe(&ring_); }
  void prep_read(io_uring_sqe* sqe, int fd, void* dst, uint32_t bytes, uint64_t offset, void* cookie);
  // A read into registered buffer `index` (dst lies inside it).
  void prep_read_fixed(io_uring_sqe* sqe, int fd, void* dst, uint32_t bytes, uint64_t offset, int index, void* cookie);

  // One io_uring_submit of every prepared entry: the number the kernel took, or -errno (EAGAIN,
  // EBUSY: it is short of resources now; the entries stay queued for the next call). EINTR is retried.
  int submit();
  uint64_t submit_calls() const { return submit_calls_; }

  // Blocks until at least one completion is there (EINTR retried); 0 or -errno.
  int wait_for_completion();
  // Calls f(cookie, res) for every completion already there and consumes them; returns how many.
  template <class F>
  unsigned drain(F&& f) {
    unsigned n = 0;
    io_uring_cqe* cqe = nullptr;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr) {
      void* cookie = io_uring_cqe_get_data(cqe);
      const int32_t res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      f(cookie, res);
      ++n;
    }
    return n;
  }

 private:
  io_uring ring_{};
  bool registered_ = false;
  uint64_t submit_calls_ = 0;
};

}  // namespace moepage::uring
