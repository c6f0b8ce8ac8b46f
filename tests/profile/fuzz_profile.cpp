// libFuzzer entry for profile loading (built with -DMOEPAGE_FUZZ=ON and clang):
//   build/bin/fuzz-profile -max_total_time=60 configs/
// Every input must load or fail with ProfileError; anything else escaping is a bug. The input is
// also tried as a size string and as a --set override on top of a fixed profile.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "profile/profile.hpp"
#include "units/byte_size.hpp"

namespace {

std::filesystem::path scratch(const char* name) {
  return std::filesystem::temp_directory_path() / ("moepage-fuzz-profile-" + std::to_string(::getpid()) + name);
}

void load_or_refuse(const std::filesystem::path& file, std::span<const std::string> overrides) {
  try {
    moepage::profile::load_profile(file, overrides, "/");
  } catch (const moepage::profile::ProfileError&) {
    // a clear refusal is the expected outcome for most inputs
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)moepage::units::parse_size(text);

  static const std::filesystem::path input = scratch(".yaml");
  std::ofstream(input, std::ios::binary | std::ios::trunc) << text;
  load_or_refuse(input, {});

  static const std::filesystem::path fixed = [] {
    const auto path = scratch("-fixed.yaml");
    std::ofstream(path) << "pager: {plugin: lru, budget: 1GiB}\ntransport: {plugin: pread}\n";
    return path;
  }();
  const std::string overrides[] = {text};
  load_or_refuse(fixed, overrides);
  return 0;
}
