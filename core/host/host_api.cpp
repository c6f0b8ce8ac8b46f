#include "host/host_api.hpp"

#include <chrono>

#include "host/log.hpp"

namespace moepage::host {
namespace {

spdlog::level::level_enum to_spdlog(int32_t level) {
  switch (level) {
    case MP_LOG_TRACE: return spdlog::level::trace;
    case MP_LOG_DEBUG: return spdlog::level::debug;
    case MP_LOG_INFO: return spdlog::level::info;
    case MP_LOG_WARN: return spdlog::level::warn;
    default: return spdlog::level::err;  // MP_LOG_ERROR and anything unknown: never lose it
  }
}

void log_line(void*, int32_t level, const char* component, const char* message) noexcept {
  try {
    logger(component != nullptr && *component != '\0' ? component : "plugin")
        ->log(to_spdlog(level), "{}", message != nullptr ? message : "");
  } catch (...) {
    // A plugin's log call must never throw back across the C boundary.
  }
}

uint64_t now_ns(void*) noexcept {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace

HostApi::HostApi(std::unique_ptr<DeviceService> device) : device_(std::move(device)) {
  api_.struct_size = sizeof api_;
  api_.abi_major = MP_ABI_MAJOR;
  api_.abi_minor = MP_ABI_MINOR;
  api_.ctx = this;
  api_.log = &log_line;
  api_.now_ns = &now_ns;
  api_.device = device_->table();
}

}  // namespace moepage::host
