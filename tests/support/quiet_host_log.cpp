// Linked into suites that provoke refusals and failures on purpose (loader, device-hip): the
// host's log stays off stderr, while LogCapture still sees every line and failing checks print
// what was captured.
#include "host/log.hpp"

namespace {
const bool quiet_stderr = (moepage::host::set_log_level(spdlog::level::off), true);
}  // namespace
