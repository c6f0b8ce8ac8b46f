// Every profile in configs/ must load and pass the option tables of the plugins this build made,
// so an example users copy never fails on a renamed or retyped option.
#include <doctest/doctest.h>

#include <filesystem>

#include "cli/component_resolution.hpp"
#include "host/host_api.hpp"
#include "host/registry.hpp"
#include "profile/profile.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

TEST_CASE("every example profile in configs validates against the built plugins") {
  moepage::host::HostApi host;
  moepage::host::Registry registry(host.get());
  registry.scan({moepage::test::plugin_dir()});
  int profiles = 0;
  for (const auto& entry : fs::directory_iterator(moepage::test::source_path("configs"))) {
    if (entry.path().extension() != ".yaml") continue;
    CAPTURE(entry.path().string());
    ++profiles;
    const auto profile = moepage::profile::load_profile(entry.path());
    CHECK_NOTHROW(moepage::cli::resolve_component(registry, profile.transport, profile.source.string()));
    CHECK_NOTHROW(moepage::cli::resolve_component(registry, profile.pager, profile.source.string()));
  }
  CHECK(profiles >= 2);
}

TEST_CASE("lru.yaml inherits the transport from default.yaml and pages with an 8 GiB budget") {
  moepage::host::HostApi host;
  moepage::host::Registry registry(host.get());
  registry.scan({moepage::test::plugin_dir()});
  const auto profile = moepage::profile::load_profile(moepage::test::source_path("configs/lru.yaml"));
  CHECK(profile.transport.plugin == "pread");
  auto pager = moepage::cli::resolve_component(registry, profile.pager, profile.source.string());
  REQUIRE(pager.options.find("budget") != nullptr);
  CHECK(*pager.options.find("budget") == "8589934592");
  CHECK(*pager.options.find("policy") == "lru");
}
