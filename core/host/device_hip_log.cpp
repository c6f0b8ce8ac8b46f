#include "host/device_hip_log.hpp"

#include "host/log.hpp"

namespace moepage::host {

void log_device_failure(bool out_of_memory, const std::string& message) noexcept {
  try {
    logger("device")->log(out_of_memory ? spdlog::level::warn : spdlog::level::err, "{}", message);
  } catch (...) {
    // Logging must never turn a status into an exception across the C table.
  }
}

}  // namespace moepage::host
