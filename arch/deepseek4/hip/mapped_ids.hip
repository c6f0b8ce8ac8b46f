// MappedIds (mapped_ids.hpp): the memory, and the host's wait.
#include "deepseek4/hip/mapped_ids.hpp"

#include <atomic>
#include <cstring>

#include "deepseek4/hip/check.hpp"

namespace moepage::ds4::gpu {

MappedIds::MappedIds(uint32_t layers, uint32_t k) : layers_(layers), k_(k) {
  const size_t bytes = size_t(layers) * (k + 1) * sizeof(int32_t);
  void* p = nullptr;
  MP_GPU_CHECK(hipHostMalloc(&p, bytes == 0 ? 1 : bytes, MP_HOST_ALLOC_SHARED));
  host_ = static_cast<int32_t*>(p);
  std::memset(host_, 0, bytes);
  void* d = nullptr;
  if (hipError_t e = hipHostGetDevicePointer(&d, p, 0); e != hipSuccess) {
    (void)hipHostFree(p);
    throw GpuError(std::string("mapped router ids: hipHostGetDevicePointer: ") + hipGetErrorString(e));
  }
  device_ = static_cast<int32_t*>(d);
}

MappedIds::~MappedIds() {
  if (host_) (void)hipHostFree(host_);
}

uint32_t MappedIds::next_stamp() {
  if (++stamp_ == 0) stamp_ = 1;
  return stamp_;
}

int32_t* MappedIds::row_device(uint32_t layer) const {
  if (layer >= layers_)
    throw GpuError("mapped router ids: layer " + std::to_string(layer) + " of " + std::to_string(layers_));
  return device_ + size_t(layer) * (k_ + 1);
}

void MappedIds::await(uint32_t layer, uint32_t stamp, Stream stream, const std::string& where, int32_t* out) const {
  const volatile int32_t* row = host_ + size_t(layer) * (k_ + 1);
  // Spin on the stamp; now and then ask whether the stream has finished, since a router that ran
  // and left no stamp (or a failed stream) would otherwise be waited for forever.
  for (uint64_t polls = 1; uint32_t(row[k_]) != stamp; ++polls) {
    if (polls % 4096 != 0) continue;
    const hipError_t e = hipStreamQuery(native(stream));
    if (e == hipErrorNotReady) continue;
    MP_GPU_CHECK(e);
    if (uint32_t(row[k_]) == stamp) break;
    throw GpuError(where + ": the router finished but its expert ids never reached the host's mapped memory (stamp " +
                   std::to_string(stamp) + ", found " + std::to_string(uint32_t(row[k_])) + ")");
  }
  // The device wrote the ids before the stamp (a system-wide fence between); read them after it.
  std::atomic_thread_fence(std::memory_order_acquire);
  for (uint32_t j = 0; j < k_; ++j) out[j] = row[j];
}

}  // namespace moepage::ds4::gpu
