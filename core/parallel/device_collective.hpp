// A collective over the ranks' device memory, attached to a LocalGroup (local_group.hpp) so that
// its mp_collective tables gain all_reduce_sum_f32_device (ABI 1.9). The ranks stay threads of
// this process; only the sum itself moves to a library that reduces on the GPUs (NCCL, RCCL:
// nccl_collective.hpp), queued on each rank's stream, with no host round trip.
#pragma once
#include <cstdint>
#include <string>

#include "moepage/moepage.h"

namespace moepage::parallel {

class DeviceCollective {
 public:
  virtual ~DeviceCollective() = default;
  // Queues data[0..n) (device memory of rank r's GPU) = the sum over the ranks, on `stream`.
  // Throws std::runtime_error with the library's message.
  virtual void all_reduce_sum(uint32_t rank, float* data, uint64_t n, mp_stream stream) = 0;
  // The group aborted: operations queued or still to come must not wait for a rank that failed.
  virtual void abort() noexcept = 0;
  // One line for the log: the library and its version.
  virtual std::string describe() const = 0;
};

}  // namespace moepage::parallel
