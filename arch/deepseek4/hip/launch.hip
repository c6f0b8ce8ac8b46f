// The launch mode of launch.hpp: per host thread, so two models in one process (the arms of an
// A/B run) each issue their forward passes in their own mode.
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/launch_mode.hpp"

namespace moepage::ds4::gpu {
namespace {

thread_local bool overlap_now = false;

// Overlapped launches need sm_90; everything else launches plainly.
bool device_overlaps() {
#if defined(MOEPAGE_GPU_NVIDIA)
  static const bool ok = [] {
    int device = 0;
    MP_GPU_CHECK(hipGetDevice(&device));
    hipDeviceProp_t prop;
    MP_GPU_CHECK(hipGetDeviceProperties(&prop, device));
    return prop.major >= 9;
  }();
  return ok;
#else
  return false;
#endif
}

}  // namespace

bool overlap_launches_now() { return overlap_now; }

OverlappedLaunches::OverlappedLaunches(bool on) : previous_(overlap_now) { overlap_now = on && device_overlaps(); }

OverlappedLaunches::~OverlappedLaunches() { overlap_now = previous_; }

}  // namespace moepage::ds4::gpu
