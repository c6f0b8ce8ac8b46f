// The conformance suite any transport or pager plugin can be run through (`moepage conform`).
// Each run_* function appends its checks to a Checklist; none throws for a misbehaving plugin.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "conform/checklist.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "moepage/moepage.h"
#include "profile/option_validation.hpp"

namespace moepage::conform {

// A component to check, what keeps its library loaded, and the ABI minor its plugin declares
// (the oldest host it runs on: which callbacks and rules apply to it).
struct Component {
  const mp_component_descriptor* descriptor = nullptr;
  std::shared_ptr<void> library;
  uint32_t abi_minor = MP_ABI_MINOR;
};

struct ConformConfig {
  // Option values for the component under test (`--option key=value`); the rest use defaults.
  std::vector<std::pair<std::string, std::string>> options;
  uint64_t seed = 1;
  std::filesystem::path scratch;  // parent of the temporary folder; empty: the system's
};

// expect_failure<Failure>(f, what), the one helper for a call that must fail, is in checklist.hpp.

// Runs `create` as the check `name`. A component that answers MP_ERR_NOT_AVAILABLE is recorded
// as skipped (it says it is unfinished; nothing else can be checked), any other failure as a
// failure. Returns whether creation worked.
bool creation_check(Checklist& list, const std::string& name, const std::function<void()>& create);

// The component's options as the host would hand them: defaults plus `config.options`, checked
// against its table. Throws profile::ProfileError like a bad profile would.
profile::ResolvedOptions resolve_options(const mp_component_descriptor& d, const ConformConfig& config);

// The option table is well formed; the host rejects unknown keys (listing the valid ones) and
// values of the wrong type.
void run_option_checks(const Component& c, const ConformConfig& config, Checklist& list);

// The vtable holds every callback the plugin's declared minor requires (mp::abi's tables).
// Returns whether it does: nothing else can be checked otherwise.
bool run_vtable_check(const Component& c, Checklist& list);

// Byte-exactness, ordering, concurrency, boundaries, the rules of transport.h (handles,
// zero-length reads, reads past the end, tickets, two waiters, array stride, which request
// failed, last_error per thread), the device path, capabilities, stats and lifetime.
void run_transport_checks(const Component& c, const mp_host_api* host, const ConformConfig& config, Checklist& list);

// Acquire over a synthetic catalog of a generated file, read through `transport` (a working
// transport, normally pread): byte-exact slots, repeated acquires, statistics and their struct
// sizes, error cases, and failed reads (the transport's status kept, the failed part named).
void run_pager_checks(const Component& c, const Component& transport, const mp_host_api* host,
                      const ConformConfig& config, Checklist& list);

}  // namespace moepage::conform
