// The one place where GPU vendors differ. Kernel code and the HIP device service are written
// against the HIP runtime names below; on AMD they are HIP itself (hipcc), on NVIDIA this header
// maps each name onto the CUDA runtime (nvcc compiles the same .hip sources as CUDA). Debian's
// HIP-on-NVIDIA headers (ROCm 5.2.3) do not compile against CUDA 13, hence our own mapping.
// Add a name here before using it anywhere else; nothing outside this file may name cuda* or
// include a vendor header.
#pragma once

#if defined(MOEPAGE_GPU_NVIDIA)
#include <cuda_runtime.h>

using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipDeviceProp_t = cudaDeviceProp;
using hipMemcpyKind = cudaMemcpyKind;
using hipHostFn_t = cudaHostFn_t;

#define hipSuccess cudaSuccess
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipEventDefault cudaEventDefault
#define hipEventDisableTiming cudaEventDisableTiming
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostMallocPortable cudaHostAllocPortable

#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc(ptr, bytes, flags) cudaHostAlloc((ptr), (bytes), (flags))
#define hipHostFree cudaFreeHost
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemGetInfo cudaMemGetInfo
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipStreamQuery cudaStreamQuery
#define hipEventCreate cudaEventCreate
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventQuery cudaEventQuery
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipLaunchHostFunc cudaLaunchHostFunc

// Warp (wavefront) size and lane shuffles. CUDA needs an explicit lane mask; HIP has none.
#define MP_WARP_SIZE 32
#define MP_SHFL_XOR(value, lane_mask) __shfl_xor_sync(0xffffffffu, (value), (lane_mask))
#define MP_SHFL(value, src_lane) __shfl_sync(0xffffffffu, (value), (src_lane))

#elif defined(MOEPAGE_GPU_AMD)
#include <hip/hip_runtime.h>

// ROCm 5.2 declares hipLaunchHostFunc but libamdhip64 does not export it; run the host function
// through the stream callback it does export (the callback's stream and status are not needed).
namespace mp_hip_compat {
struct HostFnCall {
  hipHostFn_t fn;
  void* user_data;
};
inline void run_host_fn(hipStream_t, hipError_t, void* call) {
  const HostFnCall c = *static_cast<HostFnCall*>(call);
  delete static_cast<HostFnCall*>(call);
  c.fn(c.user_data);
}
inline hipError_t launch_host_func(hipStream_t stream, hipHostFn_t fn, void* user_data) {
  auto* call = new HostFnCall{fn, user_data};
  const hipError_t e = hipStreamAddCallback(stream, &run_host_fn, call, 0);
  if (e != hipSuccess) delete call;
  return e;
}
}  // namespace mp_hip_compat
#define hipLaunchHostFunc ::mp_hip_compat::launch_host_func

// Device passes know the wavefront of the target (32 on gfx10/11 by default, 64 on gfx9);
// the host pass never uses it in a kernel, 64 keeps host-side sizing conservative.
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define MP_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define MP_WARP_SIZE 64
#endif
#define MP_SHFL_XOR(value, lane_mask) __shfl_xor((value), (lane_mask))
#define MP_SHFL(value, src_lane) __shfl((value), (src_lane))

#else
#error "hip_compat.hpp: build with MOEPAGE_GPU=hip-nvidia or hip-amd (defines MOEPAGE_GPU_NVIDIA or MOEPAGE_GPU_AMD)"
#endif

// Largest warp size of any supported target: size shared-memory arrays of per-warp partials by
// (threads per block) / 32 so they fit both.
#define MP_MIN_WARP_SIZE 32
