// The plugin ABI version as the host prints it ("1.3"), from the SDK headers' MP_ABI_MAJOR and
// MP_ABI_MINOR, so tests that read messages keep passing when the ABI gains a minor version.
#pragma once
#include <string>

#include "moepage/host_api.h"

namespace moepage::test {

inline std::string abi_text(int major = MP_ABI_MAJOR, int minor = MP_ABI_MINOR) {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace moepage::test
