// Shared by the loader tests: where the fake plugins are, and a host to load them with.
#pragma once

#include <filesystem>
#include <string>

#include "host/host_api.hpp"
#include "support/test_paths.hpp"

namespace loader_test {

inline std::filesystem::path fake_dir(const std::string& name) {
  return moepage::test::build_path("fake-plugins") / name;
}

// The single library file a fake case folder holds (lib<target>.so).
inline std::filesystem::path fake_lib(const std::string& folder, const std::string& target) {
  return fake_dir(folder) / ("lib" + target + ".so");
}

}  // namespace loader_test
