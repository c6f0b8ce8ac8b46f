// libFuzzer entry (MOEPAGE_FUZZ=ON, clang): build-fuzz/bin/fuzz-generation-config
// tests/fuzz-spec/seeds/generation_config
#include "fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  moepage::fuzz::generation_config_input(data, size);
  return 0;
}
