// Which forward backends this library holds and which one a bind gets.
#include "forward_backend.hpp"

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::ds4 {

std::unique_ptr<ForwardBackend> make_cpu_backend(const BackendInputs& in);  // cpu_backend.cpp
// gpu_backend.cpp, compiled only in GPU builds; called only there (a call in a discarded
// `if constexpr` branch needs no definition).
std::unique_ptr<ForwardBackend> make_gpu_backend(const BackendInputs& in);

// The one place the build's GPU choice shows: gpu_backend.cpp (and the HIP library under it) is
// compiled only when MOEPAGE_GPU != none, which also defines MOEPAGE_GPU_ENABLED.
#ifdef MOEPAGE_GPU_ENABLED
constexpr bool kGpuBackend = true;
#else
constexpr bool kGpuBackend = false;
#endif

std::unique_ptr<ForwardBackend> make_forward_backend(const BackendInputs& in) {
  const mp_device_service* dev = in.host != nullptr ? in.host->device : nullptr;
  if (dev == nullptr || dev->kind != MP_DEVICE_HIP) return make_cpu_backend(in);
  if constexpr (kGpuBackend) {
    return make_gpu_backend(in);
  } else {
    throw mp::Error(MP_ERR_UNSUPPORTED,
                    "arch 'deepseek4': the host's device is a HIP device but this plugin was "
                    "built for the CPU only (configure with -DMOEPAGE_GPU=hip-nvidia or hip-amd)");
  }
}

const char* arch_description() {
  return kGpuBackend ? "DeepSeek-V4 mixture of experts (CPU or HIP GPU)" : "DeepSeek-V4 mixture of experts (CPU)";
}

uint32_t backend_capabilities() { return uint32_t(MP_CAP_CPU) | (kGpuBackend ? uint32_t(MP_CAP_GPU) : 0u); }

}  // namespace moepage::ds4
