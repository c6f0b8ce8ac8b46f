// Warp and block reductions for the attention kernels (.hip files only). Correct for wave32 and
// wave64: the block must be a whole number of warps, and `partials` must hold
// blockDim.x / MP_MIN_WARP_SIZE floats.
#pragma once
#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu {

// Every lane gets the sum over its warp.
template <class T>
__device__ inline T warp_sum(T v) {
  for (int o = MP_WARP_SIZE / 2; o > 0; o >>= 1) v += MP_SHFL_XOR(v, o);
  return v;
}

// Every thread of the block gets the sum. All threads must call it.
template <class T>
__device__ inline T block_sum(T v, T* partials) {
  v = warp_sum(v);
  const int warps = int(blockDim.x) / MP_WARP_SIZE;
  __syncthreads();  // a previous call may still be reading `partials`
  if (threadIdx.x % MP_WARP_SIZE == 0) partials[threadIdx.x / MP_WARP_SIZE] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < warps; ++w) total += partials[w];
  return total;
}

}  // namespace moepage::ds4::gpu
