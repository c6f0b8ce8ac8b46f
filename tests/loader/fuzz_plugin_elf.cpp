// libFuzzer target for the loader's ELF symbol check (MOEPAGE_FUZZ=ON, clang):
//   build-fuzz/bin/fuzz-plugin-elf -runs=1000000 build-fuzz/fake-plugins/good
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "host/elf_symbols.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)moepage::host::elf_exports_function(std::span<const unsigned char>(data, size), "moepage_plugin_query");
  } catch (const std::runtime_error&) {
    // Expected for malformed input: only crashes and sanitizer reports are findings.
  }
  return 0;
}
