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

// A component to check and what keeps its library loaded.
struct Component {
  const mp_component_descriptor* descriptor = nullptr;
  std::shared_ptr<void> library;
};

struct ConformConfig {
  // Option values for the component under test (`--option key=value`); the rest use defaults.
  std::vector<std::pair<std::string, std::string>> options;
  uint64_t seed = 1;
  std::filesystem::path scratch;  // parent of the temporary folder; empty: the system's
};

// Runs `f`, which must fail with a mp::PluginError (how a plugin's refusal reaches the host), and
// returns it; if `f` succeeds the running check fails with "<what> succeeded".
template <class F>
mp::PluginError expect_failure(F&& f, const std::string& what) {
  try {
    f();
  } catch (const mp::PluginError& e) {
    return e;
  }
  throw CheckFailed(what + " succeeded");
}

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

// Byte-exactness, ordering, concurrency, boundaries, errors, poll/wait, stats and lifetime.
void run_transport_checks(const Component& c, const mp_host_api* host, const ConformConfig& config, Checklist& list);

// Acquire over a synthetic catalog of a generated file, read through `transport` (a working
// transport, normally pread): byte-exact slots, repeated acquires, statistics, error cases.
void run_pager_checks(const Component& c, const Component& transport, const mp_host_api* host,
                      const ConformConfig& config, Checklist& list);

}  // namespace moepage::conform
