// The output-struct convention of host_api.h, checked on one call: `fill(T* out)` returning an
// mp_status. A caller whose struct ends at `known_size` (an older caller) gets that prefix only,
// with its struct_size left as it set it and nothing written past it; struct_size 0 is refused
// and nothing is written at all.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

#include "moepage/moepage.h"

namespace moepage::test {

// Checks both rules and returns what the older caller received, for checks of its fields.
template <class T, class Fill>
T check_output_struct(Fill fill, uint32_t known_size) {
  struct Guarded {
    T out;
    uint64_t after;  // the caller's next bytes
  };
  Guarded fresh;
  std::memset(&fresh, 0x5A, sizeof fresh);

  Guarded g = fresh;
  g.out.struct_size = known_size;
  REQUIRE(fill(&g.out) == MP_OK);
  CHECK(g.out.struct_size == known_size);
  const auto* got = reinterpret_cast<const unsigned char*>(&g);
  const auto* untouched = reinterpret_cast<const unsigned char*>(&fresh);
  CHECK_MESSAGE(std::memcmp(got + known_size, untouched + known_size, sizeof g - known_size) == 0,
                "bytes past the caller's struct_size were written");
  const T prefix = g.out;

  g = fresh;
  g.out.struct_size = 0;
  const Guarded before = g;
  CHECK(fill(&g.out) == MP_ERR_INVALID_ARG);
  CHECK_MESSAGE(std::memcmp(&g, &before, sizeof g) == 0, "a struct with struct_size 0 was written");
  return prefix;
}

}  // namespace moepage::test
