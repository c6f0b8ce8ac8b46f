// Error checks for .hip files: MP_GPU_CHECK(call) throws GpuError naming the call, file, line and
// the runtime's message. Kernel launches check themselves (launch.hpp).
#pragma once
#include <string>

#include "deepseek4/hip/stream.hpp"
#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu {

inline void throw_gpu(hipError_t e, const char* what, const char* file, int line) {
  throw GpuError(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " + hipGetErrorString(e));
}

inline hipStream_t native(Stream s) { return static_cast<hipStream_t>(s); }

}  // namespace moepage::ds4::gpu

#define MP_GPU_CHECK(call)                                                                                 \
  do {                                                                                                     \
    const hipError_t mp_gpu_err_ = (call);                                                                 \
    if (mp_gpu_err_ != hipSuccess) ::moepage::ds4::gpu::throw_gpu(mp_gpu_err_, #call, __FILE__, __LINE__); \
  } while (0)
