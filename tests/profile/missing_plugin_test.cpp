// A profile naming a plugin that no library provides: the registry over this build's plugin
// folder lists what is available of that kind.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "cli/component_resolution.hpp"
#include "host/host_api.hpp"
#include "host/registry.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace {

// Resolves the transport section of profile `file` against this build's plugin folder; the
// ProfileError's message, or "(resolved)".
std::string transport_error(const std::filesystem::path& file) {
  const auto profile = moepage::profile::load_profile(file);
  moepage::host::HostApi host;
  moepage::host::Registry registry(host.get());
  registry.scan({moepage::test::plugin_dir()});
  try {
    moepage::cli::resolve_component(registry, profile.transport, profile.source.string());
  } catch (const moepage::profile::ProfileError& e) {
    return e.what();
  }
  return "(resolved)";
}

}  // namespace

TEST_CASE("a profile naming a missing plugin lists the available names of that kind") {
  moepage::test::TempDir dir;
  const auto file = dir.write("p.yaml", "pager: {plugin: resident}\ntransport: {plugin: preed}\n");
  const std::string message = transport_error(file);
  CHECK(message.find(file.string() + ":2:21: transport.plugin: no transport plugin named 'preed'; available: ") !=
        std::string::npos);
  CHECK(message.find("pread") != std::string::npos);
}

TEST_CASE("a profile that names no plugin for a section says so") {
  moepage::test::TempDir dir;
  const std::string message = transport_error(dir.write("p.yaml", "transport: {threads: 2}\n"));
  CHECK(message.find("transport.plugin is not set (available transport plugins: ") != std::string::npos);
}
