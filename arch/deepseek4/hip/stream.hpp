// Types shared by the GPU half of deepseek4 that plain C++ files may include: no HIP header here.
// A Stream is the native stream (hipStream_t; on NVIDIA the cudaStream_t) as a void*, the same
// value the host's device service hands out as an mp_stream on a HIP device.
#pragma once
#include <stdexcept>
#include <string>

namespace moepage::ds4::gpu {

using Stream = void*;

// What every launcher throws when the runtime reports an error: names the operation.
struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace moepage::ds4::gpu
