// The mp_host_api the core hands every plugin: logging into the host's loggers (one per
// component name), a monotonic clock, and the device service.
#pragma once

#include <memory>

#include "host/device_service.hpp"
#include "moepage/host_api.h"

namespace moepage::host {

class HostApi {
 public:
  // The CPU device unless another service is given.
  explicit HostApi(std::unique_ptr<DeviceService> device = make_cpu_device_service());
  HostApi(const HostApi&) = delete;
  HostApi& operator=(const HostApi&) = delete;

  // Valid while this object lives; plugins may keep the pointer for the lifetime of their instances.
  const mp_host_api* get() const noexcept { return &api_; }
  const DeviceService& device() const noexcept { return *device_; }

 private:
  std::unique_ptr<DeviceService> device_;
  mp_host_api api_{};
};

}  // namespace moepage::host
