// Fuzz bodies shared by the libFuzzer mains and the seed replay test. Each parses the input and,
// when it is valid, exercises what consumes it. A PagerError is the expected answer to bad input;
// anything else escaping (another exception, a crash, a sanitizer report) is a bug.
#pragma once
#include <cstddef>
#include <cstdint>

#include "moepage/pager_core/adapter_file.hpp"

namespace moepage::fuzz {

// The model every adapter input is checked against: 5 layers (0 and 1 dense), d_model 6, 4
// routed experts.
pager::AdapterModel adapter_model();

void adapter_input(const uint8_t* data, size_t size);
void trace_input(const uint8_t* data, size_t size);

}  // namespace moepage::fuzz
