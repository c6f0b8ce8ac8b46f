// The staging buffers reads land in: one block of pinned host memory from the host's device
// service (so device copies out of it are truly asynchronous, transport.h), aligned inside to
// kStagingAlignment for O_DIRECT, cut into `count` buffers of `bytes` bytes. Each buffer has an
// event recorded after the device copy out of it. A host without pinned memory gets ordinary
// aligned memory (it then offers no device copies either).
#pragma once
#include <sys/uio.h>

#include <cstdint>
#include <vector>

#include "moepage/moepage.h"

namespace moepage::uring {

inline constexpr uint64_t kStagingAlignment = 4096;

class StagingPool {
 public:
  // Throws mp::Error(MP_ERR_OOM) when the memory cannot be had.
  StagingPool(const mp_host_api* host, uint32_t count, uint64_t bytes);
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  uint32_t count() const { return count_; }
  uint64_t bytes() const { return bytes_; }
  unsigned char* data(uint32_t i) const { return base_ + uint64_t(i) * bytes_; }
  // The buffers as io_uring_register_buffers wants them.
  std::vector<iovec> iovecs() const;
  bool pinned() const { return pinned_; }
  // nullptr when the host offers no events.
  mp_event event(uint32_t i) const { return events_.empty() ? nullptr : events_[i]; }

 private:
  void release() noexcept;

  const mp_device_service* dev_;
  uint32_t count_;
  uint64_t bytes_;
  void* block_ = nullptr;
  bool pinned_ = false;
  unsigned char* base_ = nullptr;
  std::vector<mp_event> events_;
};

}  // namespace moepage::uring
