// libFuzzer entry for the expert-trace parser and the simulator (built with MOEPAGE_FUZZ=ON).
#include "fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  moepage::fuzz::trace_input(data, size);
  return 0;
}
