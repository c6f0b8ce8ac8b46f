// A second stream beside the compute stream, for work of a block that does not depend on the
// main chain (the shared expert beside the router, the compressors beside the query chain): at
// batch 1 most kernels fill a fraction of the device for a few microseconds, so two chains side by
// side hide each other's ramps, tails and one-block kernels. fork() makes the side stream wait for
// everything queued on the main stream so far; join() makes the main stream wait for the side's.
// Plain C++ (the runtime handles are opaque): the scratch structs that own one stay HIP-free.
#pragma once
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

class SideStream {
 public:
  // Creates the stream and two events; throws GpuError. An urgent stream has the device's greatest
  // priority: its kernels' blocks start before the waiting blocks of the other streams' kernels.
  explicit SideStream(bool urgent = false);
  ~SideStream();  // waits for the side stream's work, then releases everything
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

  Stream fork(Stream main);  // returns the side stream, ordered after main's queued work
  void join(Stream main);    // main waits for everything queued on the side stream so far

 private:
  void* stream_ = nullptr;
  void *forked_ = nullptr, *joined_ = nullptr;
};

}  // namespace moepage::ds4::gpu
