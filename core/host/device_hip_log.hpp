// Logging for the HIP device service. spdlog/fmt do not compile under nvcc (fmt's consteval
// format strings), so device_hip.hip reaches the host's loggers through this plain C++ function.
#pragma once

#include <string>

namespace moepage::host {

// Logs one failed device call under the "device" logger: a warning for out-of-memory (often a
// probe the caller handles), an error for anything else. Never throws.
void log_device_failure(bool out_of_memory, const std::string& message) noexcept;

}  // namespace moepage::host
