// Overlapped launches (hip/launch.hpp, arch option overlap_launches) change when a kernel's blocks
// start, never what they compute: decode steps launched overlapped give the plain launches'
// logits bit for bit, routed on the device and through the host's acquires alike. A kernel that
// touched its inputs before kernel_entry() would race here (and fail tests/kernel-entry first).
#include <doctest/doctest.h>

#include <vector>

#include "tiny_gpu_run.hpp"

using namespace moepage::ds4;
using namespace moepage::ds4::test;

TEST_CASE("decode steps launched overlapped give the plain launches' logits, bit for bit") {
  Tiny t;
  for (const bool device_routing : {true, false}) {
    CAPTURE(device_routing);
    const std::vector<std::vector<float>> plain = run(t, t.experts, device_routing, false);
    // Twice: a race would show as a difference between runs as well as against the plain launches.
    for (int round = 0; round < 2; ++round) {
      CAPTURE(round);
      CHECK(bitwise_equal(run(t, t.experts, device_routing, true), plain));
    }
  }
}
