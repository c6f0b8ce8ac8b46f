// Where a test finds what it reads: the source tree (fixtures, configs, the committed models), the
// build tree (bin/moepage, test plugins) and the build's plugin folder. ctest passes them in the
// environment (moepage_add_test in tests/CMakeLists.txt), so a test binary runs on any machine the
// trees are copied to; run outside ctest without them, it stops with a line naming the variable.
#pragma once
#include <filesystem>
#include <string_view>

namespace moepage::test {

// $MOEPAGE_TEST_SOURCE_DIR, the moepage checkout.
std::filesystem::path source_dir();
// $MOEPAGE_TEST_BUILD_DIR, the CMake build folder.
std::filesystem::path build_dir();
// $MOEPAGE_TEST_PLUGIN_DIR, the folder the build puts the shipped plugins in.
std::filesystem::path plugin_dir();

// source_dir() / relative, e.g. source_path("configs/lru.yaml").
std::filesystem::path source_path(std::string_view relative);
// A golden fixture folder: source_path("tests/fixtures") / name, e.g. fixture_path("hc4-mixed").
std::filesystem::path fixture_path(std::string_view name);
// build_dir() / relative, e.g. build_path("fake-plugins").
std::filesystem::path build_path(std::string_view relative);
// The built `moepage` executable.
std::filesystem::path moepage_exe();

}  // namespace moepage::test
