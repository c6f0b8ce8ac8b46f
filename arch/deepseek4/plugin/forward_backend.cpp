// Which forward backends this library holds and which one a bind gets.
#include "forward_backend.hpp"

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::ds4 {

using BackendFactory = std::unique_ptr<ForwardBackend> (*)(const BackendInputs&);

std::unique_ptr<ForwardBackend> make_cpu_backend(const BackendInputs& in);  // cpu_backend.cpp

// The one place the build's GPU choice shows: gpu_backend.cpp (and the HIP library under it) is
// compiled only when MOEPAGE_GPU != none, which also defines MOEPAGE_GPU_ENABLED.
#ifdef MOEPAGE_GPU_ENABLED
std::unique_ptr<ForwardBackend> make_gpu_backend(const BackendInputs& in);  // gpu_backend.cpp
constexpr BackendFactory kGpuFactory = &make_gpu_backend;
#else
constexpr BackendFactory kGpuFactory = nullptr;
#endif

std::unique_ptr<ForwardBackend> make_forward_backend(const BackendInputs& in) {
  const mp_device_service* dev = in.host != nullptr ? in.host->device : nullptr;
  if (dev == nullptr || dev->kind != MP_DEVICE_HIP) return make_cpu_backend(in);
  if (kGpuFactory == nullptr)
    throw mp::Error(MP_ERR_UNSUPPORTED, "arch 'deepseek4': the host's device is a HIP device but this plugin was "
                                        "built for the CPU only (configure with -DMOEPAGE_GPU=hip-nvidia or hip-amd)");
  return kGpuFactory(in);
}

const char* arch_description() {
  return kGpuFactory != nullptr ? "DeepSeek-V4 mixture of experts (CPU or HIP GPU)"
                                : "DeepSeek-V4 mixture of experts (CPU)";
}

uint32_t backend_capabilities() { return uint32_t(MP_CAP_CPU) | (kGpuFactory != nullptr ? uint32_t(MP_CAP_GPU) : 0u); }

}  // namespace moepage::ds4
