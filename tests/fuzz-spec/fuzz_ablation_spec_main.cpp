// libFuzzer entry (MOEPAGE_FUZZ=ON, clang): build-fuzz/bin/fuzz-ablation-spec tests/fuzz-spec/seeds/ablation_spec
#include "fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  moepage::fuzz::ablation_spec_input(data, size);
  return 0;
}
