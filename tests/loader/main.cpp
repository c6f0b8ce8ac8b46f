#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "host/log.hpp"

// The tests provoke refusals on purpose; keep stderr quiet. LogCapture still sees every line,
// and failing checks print what was captured.
static const bool quiet_stderr = (moepage::host::set_log_level(spdlog::level::off), true);
