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
#define hipHostMallocMapped cudaHostAllocMapped

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
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemGetInfo cudaMemGetInfo
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamCreateWithPriority cudaStreamCreateWithPriority
#define hipDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
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
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipFuncGetAttributes cudaFuncGetAttributes
#define hipFuncAttributes cudaFuncAttributes
#define hipHostRegister cudaHostRegister
#define hipHostUnregister cudaHostUnregister
#define hipHostRegisterDefault cudaHostRegisterDefault
// Registering memory the process may only read (a PROT_READ file mapping); HIP 5.2 has no such flag.
#define MP_HOST_REGISTER_READ_ONLY cudaHostRegisterReadOnly
// Pinned host memory that kernels read and write while the host polls it (device-written flags,
// host-written records): mapped into the device's address space, and coherent on AMD (the
// default there lets the device cache it).
#define MP_HOST_ALLOC_SHARED cudaHostAllocMapped

// Warp (wavefront) size and lane shuffles. CUDA needs an explicit lane mask; HIP has none.
#define MP_WARP_SIZE 32
#define MP_SHFL_XOR(value, lane_mask) __shfl_xor_sync(0xffffffffu, (value), (lane_mask))
#define MP_SHFL(value, src_lane) __shfl_sync(0xffffffffu, (value), (src_lane))

// Two e4m3 codes (the low 16 bits of `two_codes`, low byte first) to floats with the hardware
// conversion of sm_89 and newer: one instruction per pair to f16 (exact: every e4m3 value is an
// f16, NaN codes stay NaN) and one per value to float. MP_FP8_PAIR_CVT says whether this pass
// has it (0 in the host pass, on older NVIDIA targets and on AMD).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define MP_FP8_PAIR_CVT 1
__device__ inline void mp_e4m3x2_to_float2(unsigned two_codes, float& lo, float& hi) {
  unsigned halves;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(halves) : "h"(static_cast<unsigned short>(two_codes)));
  asm("{\n.reg .f16 l, h;\nmov.b32 {l, h}, %2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}"
      : "=f"(lo), "=f"(hi)
      : "r"(halves));
}
#else
#define MP_FP8_PAIR_CVT 0
#endif

// Overlapped launches (programmatic dependent launch, sm_90 and newer). A kernel launched with
// overlap may start while the previous kernel of its stream still runs; it must call
// mp_await_prior_grid() before it reads or writes anything another kernel touches (it returns once
// the previous grid has finished and its writes are visible; without overlap it returns at once).
// mp_release_next_grid() lets the next kernel's blocks start once every block of this grid has
// called it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ inline void mp_await_prior_grid() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ inline void mp_release_next_grid() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
#else
__device__ inline void mp_await_prior_grid() {}
__device__ inline void mp_release_next_grid() {}
#endif

// Launches `kernel` on `stream` and returns the launch's status; overlap: the launch may overlap
// the stream's previous kernel (see above).
template <class... Params, class... Args>
inline hipError_t mp_launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                                   hipStream_t stream, bool overlap, Args&&... args) {
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = overlap ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Args&&>(args)...);
}

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
#define MP_HOST_REGISTER_READ_ONLY hipHostRegisterDefault  // HIP 5.2 has no read-only registration
#define MP_HOST_ALLOC_SHARED (hipHostMallocMapped | hipHostMallocCoherent)

// Device passes know the wavefront of the target (32 on gfx10/11 by default, 64 on gfx9);
// the host pass never uses it in a kernel, 64 keeps host-side sizing conservative.
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define MP_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define MP_WARP_SIZE 64
#endif
#define MP_SHFL_XOR(value, lane_mask) __shfl_xor((value), (lane_mask))
#define MP_SHFL(value, src_lane) __shfl((value), (src_lane))
#define MP_FP8_PAIR_CVT 0  // gfx1030 / gfx90a have no FP8 conversion

// HIP has no overlapped launches: the waits are no-ops and every launch is a plain one.
__device__ inline void mp_await_prior_grid() {}
__device__ inline void mp_release_next_grid() {}
template <class... Params, class... Args>
inline hipError_t mp_launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                                   hipStream_t stream, bool, Args&&... args) {
  kernel<<<grid, block, shared_bytes, stream>>>(static_cast<Args&&>(args)...);
  return hipGetLastError();
}

#else
#error "hip_compat.hpp: build with MOEPAGE_GPU=hip-nvidia or hip-amd (defines MOEPAGE_GPU_NVIDIA or MOEPAGE_GPU_AMD)"
#endif

// Largest warp size of any supported target: size shared-memory arrays of per-warp partials by
// (threads per block) / 32 so they fit both.
#define MP_MIN_WARP_SIZE 32
