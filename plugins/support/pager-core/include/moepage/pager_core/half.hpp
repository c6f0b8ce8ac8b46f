// IEEE binary16 <-> float for adapter files. The pager core links only the standard library (it
// goes into plugins that see nothing but the SDK), so it carries its own two functions; the test
// suite checks them against plugins/support/dtype's decoders over every f16 value.
#pragma once
#include <cstdint>

namespace moepage::pager {

float half_to_float(uint16_t h);
// Round to nearest even; overflow goes to infinity, NaN stays NaN.
uint16_t float_to_half(float f);
inline bool half_is_finite(uint16_t h) { return (h & 0x7C00u) != 0x7C00u; }

}  // namespace moepage::pager
