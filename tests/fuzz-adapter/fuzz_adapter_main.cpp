// libFuzzer entry for the HFADPT adapter parser (built with MOEPAGE_FUZZ=ON).
#include "fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  moepage::fuzz::adapter_input(data, size);
  return 0;
}
