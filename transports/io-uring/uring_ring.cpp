#include "uring_ring.hpp"

#include <cerrno>
#include <cstring>

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::uring {

Ring::Ring(uint32_t entries, bool sqpoll) {
  io_uring_params params{};
  if (sqpoll) {
    params.flags |= IORING_SETUP_SQPOLL;
    params.sq_thread_idle = 50;  // ms of no submissions before the kernel thread sleeps
  }
  const int r = io_uring_queue_init_params(entries, &ring_, &params);
  if (r < 0) {
    throw mp::Error(sqpoll && (r == -EPERM || r == -EINVAL) ? MP_ERR_INVALID_ARG : MP_ERR_UNSUPPORTED,
                    mp::format("io-uring: cannot set up a ring of {} entries{}: {}", entries,
                               sqpoll ? " with sqpoll: true" : "", std::strerror(-r)));
  }
}

Ring::~Ring() { io_uring_queue_exit(&ring_); }

int Ring::register_buffers(std::span<const iovec> buffers) {
  const int r = io_uring_register_buffers(&ring_, buffers.data(), static_cast<unsigned>(buffers.size()));
  registered_ = r == 0;
  return r < 0 ? -r : 0;
}

void Ring::prep_read(io_uring_sqe* sqe, int fd, void* dst, uint32_t bytes, uint64_t offset, void* cookie) {
  io_uring_prep_read(sqe, fd, dst, bytes, offset);
  io_uring_sqe_set_data(sqe, cookie);
}

void Ring::prep_read_fixed(io_uring_sqe* sqe, int fd, void* dst, uint32_t bytes, uint64_t offset, int index,
                           void* cookie) {
  io_uring_prep_read_fixed(sqe, fd, dst, bytes, offset, index);
  io_uring_sqe_set_data(sqe, cookie);
}

int Ring::submit() {
  ++submit_calls_;
  for (;;) {
    const int r = io_uring_submit(&ring_);
    if (r != -EINTR) return r;
  }
}

int Ring::wait_for_completion() {
  io_uring_cqe* cqe = nullptr;
  for (;;) {
    const int r = io_uring_wait_cqe(&ring_, &cqe);
    if (r != -EINTR) return r;
  }
}

}  // namespace moepage::uring
