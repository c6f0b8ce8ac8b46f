// Where each expert-parallel rank runs, and how the ranks sum on GPUs. With `device: cpu` every
// rank shares the run's host api. With `device: hip` rank r gets its own host api over GPU
// r mod (the GPUs visible), so its pager's slots, its transport's copies and its architecture's
// kernels all live there, and parallel.collective picks the sum: NCCL on the devices (every rank
// on its own GPU), or the ranks' host all-reduce through pinned memory.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host/host_api.hpp"
#include "parallel/device_collective.hpp"
#include "profile/profile.hpp"

namespace moepage::cli {

class RankDevices {
 public:
  // `shared`: the run's host api (rank 0's; device 0 on a GPU). Throws std::runtime_error naming
  // parallel.collective for nccl on the CPU, on ranks that share a GPU, or for a library that
  // does not load; auto falls back to the host sum and says why in the log.
  RankDevices(const profile::Profile& prof, const mp_host_api* shared);
  ~RankDevices();
  RankDevices(const RankDevices&) = delete;
  RankDevices& operator=(const RankDevices&) = delete;

  const mp_host_api* host(uint32_t rank) const { return hosts_[rank]; }
  // The device collective the ranks' group carries, or null (the host sum).
  parallel::DeviceCollective* collective() const { return collective_.get(); }
  // One line for the log: the ranks' devices and the collective.
  const std::string& describe() const { return describe_; }

 private:
  std::vector<std::unique_ptr<host::HostApi>> own_;  // ranks > 0 on a GPU
  std::vector<const mp_host_api*> hosts_;
  std::unique_ptr<parallel::DeviceCollective> collective_;
  std::string describe_;
};

}  // namespace moepage::cli
