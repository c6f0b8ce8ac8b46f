// A paged decode step's routing through mapped host memory (ModelOptions::direct_hits). A scored
// layer's router must bring the token's expert ids to the host before the pager can acquire them,
// and while they travel the GPU idles once the shared expert beside the router is done. An async
// copy to pinned memory and an event took 21 us from queueing to the host's wake-up on an H100
// (36 us while the link carried expert copies); the router writing the ids straight into mapped
// host memory, the host spinning on a stamp, took 10 (19) (bench/results/2026-12-07-control-latency.md).
// Plain C++ (no HIP header), so the model's host code can own one.
#pragma once
#include <cstdint>
#include <string>

#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

class MappedIds {
 public:
  // One row of k ids and a stamp per layer, allocated now (at load) and zeroed.
  MappedIds(uint32_t layers, uint32_t k);
  ~MappedIds();
  MappedIds(const MappedIds&) = delete;
  MappedIds& operator=(const MappedIds&) = delete;

  // The stamp the next router launch writes after its ids (never 0, the rows' initial value).
  uint32_t next_stamp();
  // Row `layer` as the device addresses it: [k ids, stamp] (TokenRecord::host_ids).
  int32_t* row_device(uint32_t layer) const;
  // Waits until row `layer` carries `stamp`, then copies its k ids to `out`. Throws GpuError
  // naming `where` when `stream` finished (the router ran) and the stamp never came, or the
  // stream failed.
  void await(uint32_t layer, uint32_t stamp, Stream stream, const std::string& where, int32_t* out) const;

 private:
  uint32_t layers_, k_;
  int32_t* host_ = nullptr;
  int32_t* device_ = nullptr;
  uint32_t stamp_ = 0;
};

}  // namespace moepage::ds4::gpu
