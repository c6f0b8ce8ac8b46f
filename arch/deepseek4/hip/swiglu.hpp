// The clamped SwiGLU of one element, in double like cpu::swiglu_clamped (.hip files only).
#pragma once
#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu {

__device__ inline float swiglu_value(float gate, float up, float limit) {
  const double g = fmin(double(gate), double(limit));
  const double u = fmin(fmax(double(up), -double(limit)), double(limit));
  return float(g / (1.0 + exp(-g)) * u);
}

}  // namespace moepage::ds4::gpu
