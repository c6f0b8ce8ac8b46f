// Kernels whose blocks take more than the 48 KiB of shared memory a launch gets without asking.
// CUDA wants the larger size allowed per function and per device: a flag raised once per kernel
// served only the first GPU of the process, and the ranks of expert parallelism each run on a GPU
// of their own. For .hip files only.
#pragma once
#include <cstddef>

namespace moepage::ds4::gpu {

// Lets `kernel` launch with `bytes` of dynamic shared memory on the current device. Sets the
// attribute the first time a kernel needs more on a device than it was allowed there (its static
// shared memory and `bytes` past 48 KiB together); a no-op for 0 bytes and on AMD (whose blocks
// are not held to it). Thread-safe.
void allow_dynamic_shared(const void* kernel, size_t bytes);

}  // namespace moepage::ds4::gpu
