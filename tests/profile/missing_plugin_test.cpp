// A profile naming a plugin that no library provides: the registry over this build's plugin
// folder lists what is available of that kind.
#include <doctest/doctest.h>

#include <string>

#include "cli/component_resolution.hpp"
#include "host/host_api.hpp"
#include "host/registry.hpp"
#include "temp_folder.hpp"

TEST_CASE("a profile naming a missing plugin lists the available names of that kind") {
  moepage::test::TempFolder dir;
  auto file = dir.write("p.yaml", "pager: {plugin: resident}\ntransport: {plugin: preed}\n");
  const auto profile = moepage::profile::load_profile(file);
  moepage::host::HostApi host;
  moepage::host::Registry registry(host.get());
  registry.scan({std::filesystem::path(MOEPAGE_PLUGIN_BUILD_DIR)});
  std::string message;
  try {
    moepage::cli::resolve_component(registry, profile.transport, profile.source.string());
  } catch (const moepage::profile::ProfileError& e) {
    message = e.what();
  }
  CHECK(message.find(file.string() + ":2:21: transport.plugin: no transport plugin named 'preed'; available: ") !=
        std::string::npos);
  CHECK(message.find("pread") != std::string::npos);
}

TEST_CASE("a profile that names no plugin for a section says so") {
  moepage::test::TempFolder dir;
  auto file = dir.write("p.yaml", "transport: {threads: 2}\n");
  const auto profile = moepage::profile::load_profile(file);
  moepage::host::HostApi host;
  moepage::host::Registry registry(host.get());
  registry.scan({std::filesystem::path(MOEPAGE_PLUGIN_BUILD_DIR)});
  try {
    moepage::cli::resolve_component(registry, profile.transport, profile.source.string());
    FAIL("expected an error");
  } catch (const moepage::profile::ProfileError& e) {
    CHECK(std::string(e.what()).find("transport.plugin is not set (available transport plugins: ") !=
          std::string::npos);
  }
}
