// libFuzzer target: the config json parser on arbitrary bytes.
#include <cstddef>
#include <cstdint>

#include "fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  moepage::fuzz::config_json_one(data, size);
  return 0;
}
