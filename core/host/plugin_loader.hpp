// Loads one plugin library and checks what it declares against the host's ABI. This is the only
// part of the core that touches the dynamic loader (Boost.DLL lives in plugin_loader.cpp alone).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "moepage/moepage.h"

namespace moepage::host {

// A component a library provides that passed every check.
struct LoadedComponent {
  const mp_component_descriptor* descriptor = nullptr;  // static storage inside the library
  std::filesystem::path path;                           // the library file
  std::string plugin_name;
  std::string plugin_version;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;  // the oldest host minor the plugin declares it runs on
  // What score() returned (> 0), or 0 when the component has none: it is then never chosen for
  // `plugin: auto` (Registry::best).
  int32_t score = 0;
  // Keeps the library loaded; hand a copy to every instance created from this component.
  std::shared_ptr<void> library;

  int32_t kind() const noexcept { return descriptor->kind; }
  std::string name() const { return descriptor->name; }
};

// Something the host would not use, kept for `moepage plugins` to print.
struct Refusal {
  std::filesystem::path path;
  std::string component;  // "kind 'name'", empty when the whole library was refused
  std::string message;    // the full line that was logged
  bool quiet = false;     // score() == 0: not an error, logged at debug only
};

struct LoadResult {
  std::vector<LoadedComponent> components;
  std::vector<Refusal> refusals;
};

// The component name a profile gives to let the host choose by score; no component may take it.
inline constexpr std::string_view kAutoName = "auto";

// Loads `file`, queries its manifest through `host` and validates every component.
// Never throws for a bad plugin: each problem becomes a logged refusal. The host's ABI version
// is taken from host->abi_major / abi_minor.
LoadResult load_plugin(const std::filesystem::path& file, const mp_host_api* host);

}  // namespace moepage::host
