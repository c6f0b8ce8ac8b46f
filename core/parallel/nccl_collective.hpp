// The device collective over NCCL (NVIDIA) or RCCL (AMD, the same C names), loaded at run time with
// dlopen, so neither the CPU build nor CI needs it: `parallel.collective: nccl` (or auto, on GPUs)
// with `parallel.collective_library` naming the library. One communicator per rank, made at once
// for the ranks' devices (ncclCommInitAll: the ranks are threads of one process, so there is no
// unique id to exchange); each rank's sums run on its own stream.
//
// NCCL needs a distinct GPU per rank: two ranks on one device are refused here, with the devices
// named, rather than by a hang or the library's own message.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "parallel/device_collective.hpp"

namespace moepage::parallel {

class NcclCollective final : public DeviceCollective {
 public:
  // devices[r]: rank r's device index. Throws std::runtime_error naming `library` and what failed
  // (not found, a missing symbol, the library's error from making the communicators), or the
  // ranks that share a device.
  NcclCollective(const std::string& library, std::vector<int> devices);
  ~NcclCollective() override;
  NcclCollective(const NcclCollective&) = delete;
  NcclCollective& operator=(const NcclCollective&) = delete;

  void all_reduce_sum(uint32_t rank, float* data, uint64_t n, mp_stream stream) override;
  void abort() noexcept override;
  std::string describe() const override;

 private:
  struct Library;
  std::unique_ptr<Library> lib_;
  std::vector<void*> comms_;  // ncclComm_t per rank
  std::vector<int> devices_;
  int version_ = 0;
  std::atomic<bool> aborted_{false};
  // Sums enqueue under a shared lock and abort() frees the communicators under the exclusive one,
  // so no rank enqueues on a communicator being freed. A rank stuck inside the library (waiting for
  // a peer that failed) would hold it forever: abort() waits a second, then aborts anyway, which
  // is the library's own way out of such a call.
  std::shared_timed_mutex mu_;
};

// The library `parallel.collective_library` names when it is left empty: NCCL's soname in NVIDIA
// builds, RCCL's in AMD builds.
std::string default_collective_library(bool amd);

}  // namespace moepage::parallel
