// moepage plugin SDK, plugin side: the host's monotonic clock, so a plugin's timings (stats,
// traces) share the host's time base.
#pragma once

#include <chrono>
#include <cstdint>

#include "moepage/moepage.h"

namespace mp {

// Nanoseconds on the host's clock (mp_host_api::now_ns); the process's steady clock when the host
// gives none (a test host, or one older than the field).
inline uint64_t host_now_ns(const mp_host_api* host) noexcept {
  if (host != nullptr && MP_HAS_FIELD(host, mp_host_api, now_ns) && host->now_ns != nullptr)
    return host->now_ns(host->ctx);
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace mp
