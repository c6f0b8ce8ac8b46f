#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "host/log.hpp"

// The OOM case logs a warning on purpose; keep stderr quiet. LogCapture still sees every line.
static const bool quiet_stderr = (moepage::host::set_log_level(spdlog::level::off), true);
