#include "host/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "host/log.hpp"
#include "moepage/cpp/host_handles.hpp"

#ifndef MOEPAGE_INSTALL_PLUGIN_DIR
#error "MOEPAGE_INSTALL_PLUGIN_DIR must be defined by the build"
#endif

namespace moepage::host {
namespace fs = std::filesystem;

namespace {
// "a, b, c", or "none".
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}
}  // namespace

std::vector<fs::path> discovery_dirs(const std::vector<std::string>& cli_dirs, std::optional<std::string> env_path,
                                     const fs::path& executable, const fs::path& install_dir) {
  std::vector<fs::path> dirs;
  auto add = [&](const fs::path& p) {
    if (p.empty()) return;
    fs::path norm = p.lexically_normal();
    if (norm.has_relative_path() && norm.filename().empty()) norm = norm.parent_path();  // "/x/" -> "/x"
    if (std::find(dirs.begin(), dirs.end(), norm) == dirs.end()) dirs.push_back(norm);
  };
  for (const std::string& d : cli_dirs) add(d);
  if (env_path) {
    size_t start = 0;
    while (start <= env_path->size()) {
      const size_t colon = env_path->find(':', start);
      const size_t end = colon == std::string::npos ? env_path->size() : colon;
      add(env_path->substr(start, end - start));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  if (!executable.empty()) add(executable.parent_path() / ".." / "lib" / "moepage" / "plugins");
  add(install_dir);
  return dirs;
}

fs::path current_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

fs::path install_plugin_dir() { return fs::path(MOEPAGE_INSTALL_PLUGIN_DIR); }

std::vector<fs::path> default_discovery_dirs(const std::vector<std::string>& cli_dirs) {
  // A folder the user named that does not exist is a typo to report, not one to skip quietly.
  for (const std::string& d : cli_dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw std::invalid_argument("--plugin-dir " + d + ": no such folder");
  }
  std::optional<std::string> env;
  if (const char* v = std::getenv("MOEPAGE_PLUGIN_PATH"); v != nullptr) env = v;
  return discovery_dirs(cli_dirs, env, current_executable(), install_plugin_dir());
}

Registry::Registry(const mp_host_api* host) : host_(host) {}

Registry::~Registry() {
  // Newest first, so a library is let go in the reverse of the order it was loaded in; any
  // instance still alive holds its own keep-alive and unloads its library later.
  while (!components_.empty()) components_.pop_back();
}

void Registry::scan(const std::vector<fs::path>& dirs) {
  for (const fs::path& d : dirs) scan_directory(d);
}

void Registry::scan_directory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    logger("registry")->debug("plugin directory {} does not exist; skipped", dir.string());
    return;
  }
  scanned_.push_back(dir);
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".so" && it->is_regular_file(ec)) files.push_back(p);
  }
  if (ec) logger("registry")->warn("plugin directory {} could not be listed: {}", dir.string(), ec.message());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) add_library(f);
}

void Registry::add_library(const fs::path& file) {
  std::error_code ec;
  fs::path canonical = fs::canonical(file, ec);
  if (ec) canonical = fs::absolute(file, ec);
  if (std::find(loaded_files_.begin(), loaded_files_.end(), canonical) != loaded_files_.end()) {
    logger("registry")->debug("plugin library {} already loaded; skipped", canonical.string());
    return;
  }
  loaded_files_.push_back(canonical);

  LoadResult r = load_plugin(canonical, host_);
  for (Refusal& refusal : r.refusals) refusals_.push_back(std::move(refusal));
  for (LoadedComponent& c : r.components) {
    if (const LoadedComponent* first = try_find(c.kind(), c.name())) {
      Refusal dup;
      dup.path = c.path;
      dup.component = mp::detail::label_of(*c.descriptor);
      dup.message = "refused plugin " + c.path.string() + " component " + dup.component + ": duplicate " +
                    mp::kind_name(c.kind()) + " name '" + c.name() + "', already provided by " + first->path.string() +
                    " (host ABI " + std::to_string(host_->abi_major) + "." + std::to_string(host_->abi_minor) +
                    ", plugin ABI " + std::to_string(c.abi_major) + "." + std::to_string(c.abi_minor) +
                    ", first plugin ABI " + std::to_string(first->abi_major) + "." + std::to_string(first->abi_minor) +
                    ")";
      logger("loader")->warn("{}", dup.message);
      refusals_.push_back(std::move(dup));
      continue;
    }
    logger("registry")
        ->debug("{} {} from {}", mp::detail::label_of(*c.descriptor),
                c.descriptor->version != nullptr ? c.descriptor->version : "", c.path.string());
    components_.push_back(std::move(c));
  }
}

const LoadedComponent* Registry::try_find(int32_t kind, std::string_view name) const {
  for (const LoadedComponent& c : components_)
    if (c.kind() == kind && name == c.descriptor->name) return &c;
  return nullptr;
}

const LoadedComponent& Registry::best(int32_t kind) const {
  const LoadedComponent* top = nullptr;
  const LoadedComponent* tied = nullptr;
  for (const LoadedComponent& c : components_) {
    if (c.kind() != kind || c.score <= 0) continue;
    if (top == nullptr || c.score > top->score) {
      top = &c;
      tied = nullptr;
    } else if (c.score == top->score) {
      tied = &c;
    }
  }
  const std::string what = std::string(mp::kind_name(kind));
  if (top == nullptr)
    throw RegistryError("no " + what + " plugin ranks itself for this host (none has a score), so '" +
                        std::string(kAutoName) + "' cannot choose; name one of: " + join_names(names(kind)));
  if (tied != nullptr)
    throw RegistryError(what + " plugins '" + top->name() + "' and '" + tied->name() + "' both score " +
                        std::to_string(top->score) + " on this host, so '" + std::string(kAutoName) +
                        "' cannot choose; name one of them");
  return *top;
}

std::vector<std::string> Registry::names(int32_t kind) const {
  std::vector<std::string> out;
  for (const LoadedComponent& c : components_)
    if (c.kind() == kind) out.push_back(c.name());
  std::sort(out.begin(), out.end());
  return out;
}

const LoadedComponent& Registry::find(int32_t kind, std::string_view name) const {
  if (const LoadedComponent* c = try_find(kind, name)) return *c;
  const std::string available = join_names(names(kind));
  std::string searched;
  for (const fs::path& d : scanned_) searched += (searched.empty() ? "" : ", ") + d.string();
  throw RegistryError("no " + std::string(mp::kind_name(kind)) + " plugin named '" + std::string(name) +
                      "'; available: " + available +
                      " (searched: " + (searched.empty() ? "no plugin directory exists" : searched) + ")");
}

}  // namespace moepage::host
