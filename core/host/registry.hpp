// The set of usable components, found by scanning plugin directories in DESIGN.md's order.
// Selection is by descriptor kind + name, never by file name; the first library that provides a
// kind/name wins and later ones are refused (both paths logged).
//
// Lifetime: every LoadedComponent holds a keep-alive of its library, and so does every handle
// created from it, so the libraries unload only after the registry and every instance are gone.
// See plugin_stack.hpp for the order instances are destroyed in.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "host/plugin_loader.hpp"

namespace moepage::host {

// A lookup that found nothing; the message lists what is available.
class RegistryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Plugin directories in search order: each --plugin-dir, then $MOEPAGE_PLUGIN_PATH (colon
// separated, empty entries skipped), then <exe dir>/../lib/moepage/plugins, then install_dir.
// Duplicates (same lexically normalised path) keep their first position.
std::vector<std::filesystem::path> discovery_dirs(const std::vector<std::string>& cli_dirs,
                                                  std::optional<std::string> env_path,
                                                  const std::filesystem::path& executable,
                                                  const std::filesystem::path& install_dir);

// discovery_dirs() with the real environment, /proc/self/exe and the install-time default. Throws
// std::invalid_argument naming a --plugin-dir folder (cli_dirs) that does not exist.
std::vector<std::filesystem::path> default_discovery_dirs(const std::vector<std::string>& cli_dirs);

// The running executable (/proc/self/exe); empty if it cannot be read.
std::filesystem::path current_executable();

// The plugin directory chosen at configure time (MOEPAGE_INSTALL_PLUGIN_DIR).
std::filesystem::path install_plugin_dir();

class Registry {
 public:
  explicit Registry(const mp_host_api* host);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Scans each directory in order; a directory that does not exist is skipped (debug log).
  void scan(const std::vector<std::filesystem::path>& dirs);
  // Loads every "*.so" file of `dir`, in file name order.
  void scan_directory(const std::filesystem::path& dir);
  // Loads one library file.
  void add_library(const std::filesystem::path& file);

  // nullptr when no component of that kind has that name.
  const LoadedComponent* try_find(int32_t kind, std::string_view name) const;
  // Throws RegistryError: "no pager plugin named 'lruu'; available: adapter-prefetch, lru, resident".
  const LoadedComponent& find(int32_t kind, std::string_view name) const;
  // The highest-scoring component of one kind, for a profile that says `plugin: auto`.
  // Components without score() never qualify. Throws RegistryError when none scored, or when two
  // share the top score (naming both: the profile must choose).
  const LoadedComponent& best(int32_t kind) const;
  // Sorted names of the usable components of one kind.
  std::vector<std::string> names(int32_t kind) const;

  // Every usable component, in discovery order.
  const std::vector<LoadedComponent>& components() const noexcept { return components_; }
  // Every refusal, in discovery order (quiet ones included).
  const std::vector<Refusal>& refusals() const noexcept { return refusals_; }
  const std::vector<std::filesystem::path>& scanned_dirs() const noexcept { return scanned_; }
  const mp_host_api* host() const noexcept { return host_; }

 private:
  const mp_host_api* host_;
  std::vector<std::filesystem::path> scanned_;
  std::vector<std::filesystem::path> loaded_files_;  // canonical, so a file reached twice loads once
  std::vector<LoadedComponent> components_;
  std::vector<Refusal> refusals_;
};

}  // namespace moepage::host
