// The rotary embedding of one pair of channels (.hip files only): (x0, x1) turned by the angle
// whose cosine and sine are c and sn. Every kernel that ropes a pair goes through here, so the
// norm_rope pass and the attend kernel that ropes Q itself give the same bits.
#pragma once

#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu {

__device__ inline float2 rope_pair(float x0, float x1, float c, float sn) {
  return make_float2(x0 * c - x1 * sn, x1 * c + x0 * sn);
}

}  // namespace moepage::ds4::gpu
