#include "cli/rank_devices.hpp"

#include <stdexcept>

#include "cli/cli_common.hpp"
#include "host/log.hpp"
#include "parallel/nccl_collective.hpp"

namespace moepage::cli {
namespace {

std::string collective_key(const profile::ParallelSettings& p) {
  return "parallel.collective" + (p.collective_where.empty() ? "" : " (" + p.collective_where + ")");
}

std::string library_name(const profile::ParallelSettings& p) {
  if (!p.collective_library.empty()) return p.collective_library;
#if defined(MOEPAGE_GPU_ENABLED)
  return parallel::default_collective_library(host::hip_build_is_amd());
#else
  return parallel::default_collective_library(false);
#endif
}

}  // namespace

RankDevices::RankDevices(const profile::Profile& prof, const mp_host_api* shared) {
  const profile::ParallelSettings& p = prof.parallel;
  const uint32_t ranks = p.ranks;
  if (prof.device != "hip") {
    if (p.collective == "nccl")
      throw std::runtime_error(collective_key(p) + ": nccl sums in GPU memory, but the profile's device is " +
                               prof.device + " (expected device: hip, or collective: auto or host)");
    hosts_.assign(ranks, shared);
    describe_ = "every rank on the " + prof.device + ", summed on the host";
    return;
  }
  const int count = device_count("hip");
  if (count <= 0) throw std::runtime_error(prof.source.string() + ": device: hip: no GPU visible");
  std::vector<int> devices(ranks);
  for (uint32_t r = 0; r < ranks; ++r) devices[r] = int(r % uint32_t(count));
  hosts_.push_back(shared);  // device 0, the run's own service
  for (uint32_t r = 1; r < ranks; ++r) {
    own_.push_back(std::make_unique<host::HostApi>(
        make_device_service("hip", "rank " + std::to_string(r) + " on GPU " + std::to_string(devices[r]), devices[r])));
    hosts_.push_back(own_.back()->get());
  }
  std::string placed = "ranks on GPUs";
  for (uint32_t r = 0; r < ranks; ++r) {
    placed += r > 0 ? ',' : ' ';
    placed += std::to_string(devices[r]);
  }
  const bool shared_gpu = ranks > uint32_t(count);
  const std::string library = library_name(p);
  if (p.collective == "host" || (p.collective == "auto" && shared_gpu)) {
    describe_ = placed + ", summed on the host through pinned memory" +
                (p.collective == "auto" ? " (" + std::to_string(ranks) + " ranks on " + std::to_string(count) +
                                              " GPU(s): NCCL needs one GPU per rank)"
                                        : "");
    return;
  }
  try {
    collective_ = std::make_unique<parallel::NcclCollective>(library, devices);
  } catch (const std::exception& e) {
    if (p.collective == "nccl") throw std::runtime_error(collective_key(p) + ": " + e.what());
    host::logger("run")->warn("{}: auto: {}; the ranks sum on the host instead", collective_key(p), e.what());
    describe_ = placed + ", summed on the host through pinned memory";
    return;
  }
  describe_ = placed + ", summed on the GPUs by " + collective_->describe();
}

RankDevices::~RankDevices() = default;

}  // namespace moepage::cli
