// The tree paths come from ctest's environment, and they point at the trees this build uses.
#include <doctest/doctest.h>

#include <filesystem>

#include "support/abi_text.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using namespace moepage::test;

TEST_CASE("the source tree holds the fixtures and the configs the suites read") {
  CHECK(fs::is_regular_file(source_path("configs/default.yaml")));
  CHECK(fs::is_directory(source_path("tests/fixtures")));
  CHECK(source_path("configs") == source_dir() / "configs");
  CHECK(fs::is_regular_file(fixture_path("hc4-mixed") / "config.json"));
}

TEST_CASE("the build tree holds the moepage executable and the plugin folder") {
  CHECK(moepage_exe() == build_dir() / "bin" / "moepage");
  CHECK(fs::is_directory(plugin_dir()));
  CHECK(build_path("fake-plugins") == build_dir() / "fake-plugins");
}

TEST_CASE("the ABI text is the headers' major and minor") {
  CHECK(abi_text() == std::to_string(MP_ABI_MAJOR) + "." + std::to_string(MP_ABI_MINOR));
  CHECK(abi_text(2, 0) == "2.0");
}
