#include "support/test_paths.hpp"

#include <cstdio>
#include <cstdlib>

namespace moepage::test {
namespace fs = std::filesystem;
namespace {

// A missing variable is a setup mistake, not a failed check: one clear line and a failing exit,
// rather than every test case reporting a path that does not exist.
fs::path from_environment(const char* name, const char* meaning) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    std::fprintf(stderr, "moepage tests: %s is not set; run the suite through ctest, or set it to %s\n", name, meaning);
    std::exit(2);
  }
  return fs::path(value);
}

}  // namespace

fs::path source_dir() { return from_environment("MOEPAGE_TEST_SOURCE_DIR", "the moepage source tree"); }

fs::path build_dir() { return from_environment("MOEPAGE_TEST_BUILD_DIR", "the CMake build folder"); }

fs::path plugin_dir() {
  return from_environment("MOEPAGE_TEST_PLUGIN_DIR", "the build's plugin folder (<build>/lib/moepage/plugins)");
}

fs::path source_path(std::string_view relative) { return source_dir() / relative; }

fs::path fixture_path(std::string_view name) { return source_dir() / "tests" / "fixtures" / name; }

fs::path build_path(std::string_view relative) { return build_dir() / relative; }

fs::path moepage_exe() { return build_dir() / "bin" / "moepage"; }

}  // namespace moepage::test
