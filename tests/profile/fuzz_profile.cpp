// libFuzzer entry for profile loading (built with -DMOEPAGE_FUZZ=ON and clang):
//   build/bin/fuzz-profile -max_total_time=60 configs/
// Every input must load or fail with ProfileError; anything else escaping is a bug. The input is
// parsed from memory as a profile (no file written per input), and tried as a size string and as
// a --set override on top of a fixed profile.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "profile/profile.hpp"
#include "units/byte_size.hpp"

namespace {

template <typename Load>
void load_or_refuse(Load load) {
  try {
    load();
  } catch (const moepage::profile::ProfileError&) {
    // a clear refusal is the expected outcome for most inputs
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace profile = moepage::profile;
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)moepage::units::parse_size(text);

  // A folder that does not exist: a `base:` in the input is refused as missing, never read.
  static const std::filesystem::path as_path = "/nonexistent-moepage-fuzz/profile.yaml";
  const std::filesystem::path root = "/";
  load_or_refuse([&] { profile::load_profile_text(text, as_path, {}, root); });

  static const std::string fixed = "pager: {plugin: lru, budget: 1GiB}\ntransport: {plugin: pread}\n";
  const profile::Override overrides[] = {{text, ""}};
  load_or_refuse([&] { profile::load_profile_text(fixed, as_path, overrides, root); });
  return 0;
}
