// Discovery order, selection by kind/name, duplicates and lookup errors.
#include <doctest/doctest.h>

#include <stdexcept>

#include "host/host_api.hpp"
#include "host/log.hpp"
#include "host/registry.hpp"
#include "support.hpp"
#include "support/abi_text.hpp"

using moepage::host::HostApi;
using moepage::host::LogCapture;
using moepage::host::Registry;
using moepage::host::RegistryError;
using moepage::test::abi_text;
namespace fs = std::filesystem;

TEST_CASE("plugin directories are searched in the order --plugin-dir, environment, next to the binary, install") {
  const auto dirs = moepage::host::discovery_dirs({"/cli/one", "/cli/two"}, std::string("/env/a::/env/b"),
                                                  "/opt/moepage/bin/moepage", "/usr/lib/moepage/plugins");
  const std::vector<fs::path> expected = {
      "/cli/one", "/cli/two", "/env/a", "/env/b", "/opt/moepage/lib/moepage/plugins", "/usr/lib/moepage/plugins"};
  CHECK(dirs == expected);
}

TEST_CASE("a directory named twice in the search path is searched once, at its first place") {
  const auto dirs = moepage::host::discovery_dirs({"/x/plugins"}, std::string("/y:/x/plugins/"), "", "/x/plugins");
  const std::vector<fs::path> expected = {"/x/plugins", "/y"};
  CHECK(dirs == expected);
}

TEST_CASE("without the environment variable the search path still has the binary's and the install folder") {
  const auto dirs = moepage::host::discovery_dirs({}, std::nullopt, "/a/bin/moepage", "/inst");
  REQUIRE(dirs.size() == 2);
  CHECK(dirs[0] == fs::path("/a/lib/moepage/plugins"));
  CHECK(dirs[1] == fs::path("/inst"));
}

TEST_CASE("the second library declaring the same kind and name is refused and both paths are logged") {
  HostApi host;
  LogCapture logs;
  Registry registry(host.get());
  registry.scan_directory(loader_test::fake_dir("duplicate"));
  INFO(logs.dump());
  const auto a = fs::canonical(loader_test::fake_lib("duplicate", "fake-dup-a"));
  const auto b = fs::canonical(loader_test::fake_lib("duplicate", "fake-dup-b"));
  const auto& winner = registry.find(MP_KIND_TRANSPORT, "fake-dup");
  CHECK(winner.path == a);
  CHECK(std::string(winner.descriptor->version) == "1.0.0-a");
  REQUIRE(registry.refusals().size() == 1);
  const std::string& msg = registry.refusals()[0].message;
  CHECK(msg == "refused plugin " + b.string() +
                   " component transport 'fake-dup': duplicate transport name 'fake-dup', "
                   "already provided by " +
                   a.string() + " (host ABI " + abi_text() + ", plugin ABI " + abi_text() + ", first plugin ABI " +
                   abi_text() + ")");
  CHECK(logs.find({"warning loader: ", b.string(), a.string()}) != "");
}

TEST_CASE("a library reached twice through the search path is loaded once") {
  HostApi host;
  Registry registry(host.get());
  registry.scan({loader_test::fake_dir("duplicate"), loader_test::fake_dir("duplicate") / "."});
  CHECK(registry.components().size() == 1);
  CHECK(registry.refusals().size() == 1);  // fake-dup-b's duplicate, once: the second pass loads nothing
}

TEST_CASE("the first directory in search order wins a name two directories provide") {
  HostApi host;
  LogCapture logs;
  Registry registry(host.get());
  // Both provide transport "fake-dup"; order of the search path decides, not file names.
  registry.add_library(loader_test::fake_lib("duplicate", "fake-dup-b"));
  registry.add_library(loader_test::fake_lib("duplicate", "fake-dup-a"));
  CHECK(std::string(registry.find(MP_KIND_TRANSPORT, "fake-dup").descriptor->version) == "1.0.0-b");
  REQUIRE(registry.refusals().size() == 1);
  CHECK(registry.refusals()[0].path.filename() == "libfake-dup-a.so");
}

TEST_CASE("asking for a missing component lists the available names of that kind") {
  HostApi host;
  Registry registry(host.get());
  registry.scan(
      {loader_test::fake_dir("good"), loader_test::fake_dir("lifecycle"), loader_test::fake_dir("score-zero")});
  try {
    registry.find(MP_KIND_TRANSPORT, "fake-goood");
    FAIL("find should have thrown");
  } catch (const RegistryError& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("no transport plugin named 'fake-goood'; available: fake-good, fake-life, fake-usable (searched: ",
                    0) == 0);
  }
  CHECK_THROWS_WITH_AS(registry.find(MP_KIND_PAGER, "lru"),
                       doctest::Contains("no pager plugin named 'lru'; available: fake-life"), RegistryError);
}

TEST_CASE("selection is by the descriptor's name, not the file's") {
  HostApi host;
  Registry registry(host.get());
  registry.scan({loader_test::fake_dir("score-zero")});
  // The file is libfake-score-zero.so; neither its name nor the plugin's name selects anything.
  CHECK(registry.try_find(MP_KIND_TRANSPORT, "fake-score-zero") == nullptr);
  CHECK(registry.try_find(MP_KIND_TRANSPORT, "fake-usable") != nullptr);
  CHECK(registry.try_find(MP_KIND_TRANSPORT, "fake-unusable") == nullptr);
}

TEST_CASE("a search path entry that does not exist is skipped") {
  HostApi host;
  Registry registry(host.get());
  registry.scan({"/nonexistent/moepage/plugins", loader_test::fake_dir("good")});
  CHECK(registry.scanned_dirs().size() == 1);
  CHECK(registry.try_find(MP_KIND_TRANSPORT, "fake-good") != nullptr);
}

TEST_CASE("a --plugin-dir that does not exist is an error, not a folder skipped") {
  CHECK_THROWS_WITH_AS(moepage::host::default_discovery_dirs({"/no/such/plugins"}),
                       "--plugin-dir /no/such/plugins: no such folder", std::invalid_argument);
}

TEST_CASE("the default search path starts with --plugin-dir and reads MOEPAGE_PLUGIN_PATH") {
  const std::string cli_dir = loader_test::fake_dir("good").string();
  ::setenv("MOEPAGE_PLUGIN_PATH", "/from/env", 1);
  const auto dirs = moepage::host::default_discovery_dirs({cli_dir});
  ::unsetenv("MOEPAGE_PLUGIN_PATH");
  REQUIRE(dirs.size() >= 3);
  CHECK(dirs[0] == fs::path(cli_dir));
  CHECK(dirs[1] == fs::path("/from/env"));
  CHECK(dirs[2] ==
        (moepage::host::current_executable().parent_path() / ".." / "lib/moepage/plugins").lexically_normal());
  CHECK(dirs.back() == moepage::host::install_plugin_dir());
}
