// The core's device service: what plugins reach memory, streams, events and copies through.
// Each backend lives in its own file (device_cpu.cpp; device_hip.hip in GPU builds) behind this interface.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "moepage/host_api.h"

namespace moepage::host {

class DeviceService {
 public:
  virtual ~DeviceService() = default;
  // The C table handed to plugins; valid while this object lives.
  virtual const mp_device_service* table() const noexcept = 0;
  // The message of the last call through table() on this thread that failed ("" if none). The C
  // table has no message channel, so failures are also logged under the "device" logger.
  virtual std::string last_error() const { return {}; }
};

// The CPU device: aligned host memory, synchronous copies, events complete at record.
// memory_info reads `meminfo` (tests point it at a fake file).
std::unique_ptr<DeviceService> make_cpu_device_service(std::filesystem::path meminfo = "/proc/meminfo");

// The HIP device `device_index` (MOEPAGE_GPU=hip-nvidia or hip-amd builds only; defined in
// device_hip.hip). mp_stream is the native hipStream_t and mp_event the hipEvent_t; a NULL stream
// means a non-blocking compute stream the service creates. Throws std::runtime_error with the
// runtime's message when there is no such device.
std::unique_ptr<DeviceService> make_hip_device_service(int device_index = 0);

// How many HIP devices this process sees; 0 when the runtime finds none. GPU builds only.
int hip_device_count() noexcept;
// True in a hip-amd build, false in a hip-nvidia one. GPU builds only.
bool hip_build_is_amd() noexcept;

// One line naming the build's backend and the HIP devices this process sees ("hip-nvidia build;
// 1 GPU(s): 0: NVIDIA H200 (140 GiB)", or why there is none), for `moepage plugins`. GPU builds
// only; never throws.
std::string describe_hip_devices() noexcept;

// Memory of the machine as /proc/meminfo reports it (MemAvailable, MemTotal), in bytes.
struct MemInfo {
  uint64_t available = 0;
  uint64_t total = 0;
};
// Reads a meminfo-format file; throws std::runtime_error naming the file and the missing key
// when it cannot be read or lacks MemAvailable / MemTotal.
MemInfo read_meminfo(const std::filesystem::path& path);

}  // namespace moepage::host
