// The per-device shared-memory allowances of dynamic_shared.hpp.
#include "deepseek4/hip/dynamic_shared.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "deepseek4/hip/check.hpp"

namespace moepage::ds4::gpu {

void allow_dynamic_shared(const void* kernel, size_t bytes) {
#if defined(MOEPAGE_GPU_NVIDIA)
  // A block gets 48 KiB of shared memory without asking, its static arrays included: a kernel
  // with 4 KiB of its own may take 44 KiB more unasked, not 48.
  constexpr size_t kWithoutAsking = 48 * 1024;
  if (bytes == 0) return;
  int device = 0;
  MP_GPU_CHECK(hipGetDevice(&device));
  const std::pair<const void*, int> key{kernel, device};
  // Decode launches its BF16 products with a ring every step: this thread remembers the sizes it
  // has seen allowed, so a repeat takes no lock (an allowance, once set, is never lowered).
  thread_local std::map<std::pair<const void*, int>, size_t> seen;
  if (const auto it = seen.find(key); it != seen.end() && bytes <= it->second) return;
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, size_t> allowed;  // the largest size checked so far
  const std::lock_guard<std::mutex> lock(mutex);
  size_t& now = allowed[key];
  if (bytes > now) {
    hipFuncAttributes attributes{};
    MP_GPU_CHECK(hipFuncGetAttributes(&attributes, kernel));
    if (attributes.sharedSizeBytes + bytes > kWithoutAsking)
      MP_GPU_CHECK(hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    now = bytes;
  }
  seen[key] = now;
#else
  (void)kernel;
  (void)bytes;
#endif
}

}  // namespace moepage::ds4::gpu
