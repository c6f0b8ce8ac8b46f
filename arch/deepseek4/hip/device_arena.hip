#include "deepseek4/hip/device_arena.hpp"

#include <algorithm>

#include "deepseek4/hip/check.hpp"

namespace moepage::ds4::gpu {

DeviceArena::DeviceArena(Kind kind, uint64_t chunk_bytes) : kind_(kind), chunk_bytes_(chunk_bytes) {}

DeviceArena::~DeviceArena() {
  for (void* p : chunks_) {
    if (kind_ == Kind::Device) (void)hipFree(p);
    else (void)hipHostFree(p);
  }
}

void* DeviceArena::take_bytes(uint64_t bytes) {
  constexpr uint64_t kAlign = 256;
  bytes = std::max<uint64_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  if (bytes > left_) {
    const uint64_t size = std::max(bytes, chunk_bytes_);
    void* p = nullptr;
    if (kind_ == Kind::Device) MP_GPU_CHECK(hipMalloc(&p, size));
    else MP_GPU_CHECK(hipHostMalloc(&p, size, hipHostMallocDefault));
    // The legacy default stream does not order non-blocking streams: finish the fill here.
    if (kind_ == Kind::Device) {
      MP_GPU_CHECK(hipMemset(p, 0, size));
      MP_GPU_CHECK(hipDeviceSynchronize());
    } else std::fill_n(static_cast<std::byte*>(p), size, std::byte{0});
    chunks_.push_back(p);
    cursor_ = static_cast<std::byte*>(p);
    left_ = size;
    reserved_ += size;
  }
  void* out = cursor_;
  cursor_ += bytes;
  left_ -= bytes;
  taken_ += bytes;
  return out;
}

void upload(void* device_dst, const void* host_src, uint64_t bytes) {
  if (!bytes) return;
  MP_GPU_CHECK(hipMemcpy(device_dst, host_src, bytes, hipMemcpyHostToDevice));
  // From pageable memory the copy may return before the DMA lands, and it runs on the legacy
  // default stream, which non-blocking compute streams do not wait for: finish it here (load only).
  MP_GPU_CHECK(hipDeviceSynchronize());
}

void download(void* host_dst, const void* device_src, uint64_t bytes) {
  if (bytes) MP_GPU_CHECK(hipMemcpy(host_dst, device_src, bytes, hipMemcpyDeviceToHost));
}

void upload_async(void* device_dst, const void* pinned_src, uint64_t bytes, Stream s) {
  if (bytes) MP_GPU_CHECK(hipMemcpyAsync(device_dst, pinned_src, bytes, hipMemcpyHostToDevice, native(s)));
}

void download_async(void* pinned_dst, const void* device_src, uint64_t bytes, Stream s) {
  if (bytes) MP_GPU_CHECK(hipMemcpyAsync(pinned_dst, device_src, bytes, hipMemcpyDeviceToHost, native(s)));
}

Stream create_stream() {
  hipStream_t s = nullptr;
  MP_GPU_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
  return s;
}

void destroy_stream(Stream s) { (void)hipStreamDestroy(native(s)); }

void synchronize(Stream s) { MP_GPU_CHECK(hipStreamSynchronize(native(s))); }

bool stream_idle(Stream s) {
  const hipError_t e = hipStreamQuery(native(s));
  if (e == hipErrorNotReady) return false;
  MP_GPU_CHECK(e);
  return true;
}

int current_device() {
  int device = 0;
  MP_GPU_CHECK(hipGetDevice(&device));
  return device;
}

void set_current_device(int device) { MP_GPU_CHECK(hipSetDevice(device)); }

}  // namespace moepage::ds4::gpu
