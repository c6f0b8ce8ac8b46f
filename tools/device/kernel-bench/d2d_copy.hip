// The reference rate of the benchmarks: what one device-to-device copy of 1 GiB achieves
// (counting the bytes read and the bytes written, as the roofline of decode does).
#include <chrono>
#include <stdexcept>
#include <string>

#include "bench.hpp"
#include "gpu/hip_compat.hpp"

namespace moepage::bench {
namespace {

void check(hipError_t e, const char* what) {
  if (e != hipSuccess) throw std::runtime_error(std::string("d2d copy: ") + what + ": " + hipGetErrorString(e));
}

}  // namespace

double d2d_copy_gbps() {
  constexpr size_t kBytes = size_t(1) << 30;
  void *src = nullptr, *dst = nullptr;
  check(hipMalloc(&src, kBytes), "hipMalloc source");
  check(hipMalloc(&dst, kBytes), "hipMalloc destination");
  check(hipMemset(src, 1, kBytes), "hipMemset");
  check(hipMemcpy(dst, src, kBytes, hipMemcpyDeviceToDevice), "warm-up copy");
  check(hipDeviceSynchronize(), "synchronize");
  constexpr int kReps = 5;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kReps; ++i) check(hipMemcpy(dst, src, kBytes, hipMemcpyDeviceToDevice), "copy");
  check(hipDeviceSynchronize(), "synchronize");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kReps;
  check(hipFree(src), "hipFree");
  check(hipFree(dst), "hipFree");
  return 2.0 * double(kBytes) / s / 1e9;
}

}  // namespace moepage::bench
