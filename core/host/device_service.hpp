// The core's device service: what plugins reach memory, streams, events and copies through.
// Each backend lives in its own file (device_cpu.cpp now; a HIP one later) behind this interface.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "moepage/host_api.h"

namespace moepage::host {

class DeviceService {
 public:
  virtual ~DeviceService() = default;
  // The C table handed to plugins; valid while this object lives.
  virtual const mp_device_service* table() const noexcept = 0;
};

// The CPU device: aligned host memory, synchronous copies, events complete at record.
// memory_info reads `meminfo` (tests point it at a fake file).
std::unique_ptr<DeviceService> make_cpu_device_service(std::filesystem::path meminfo = "/proc/meminfo");

// Memory of the machine as /proc/meminfo reports it (MemAvailable, MemTotal), in bytes.
struct MemInfo {
  uint64_t available = 0;
  uint64_t total = 0;
};
// Reads a meminfo-format file; throws std::runtime_error naming the file and the missing key
// when it cannot be read or lacks MemAvailable / MemTotal.
MemInfo read_meminfo(const std::filesystem::path& path);

}  // namespace moepage::host
