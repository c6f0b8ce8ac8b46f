// Device and pinned-host memory for the GPU model, all taken at load (nothing is allocated on the
// decode path). An arena hands out aligned pieces of large chunks and frees them together.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

class DeviceArena {
 public:
  enum class Kind { Device, Pinned };
  explicit DeviceArena(Kind kind = Kind::Device, uint64_t chunk_bytes = uint64_t(64) << 20);
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // `bytes` of memory aligned to 256 bytes, zero-filled. Throws GpuError when out of memory.
  void* take_bytes(uint64_t bytes);
  template <class T>
  T* take(uint64_t count) {
    return static_cast<T*>(take_bytes(count * sizeof(T)));
  }

  uint64_t bytes_taken() const { return taken_; }
  uint64_t bytes_reserved() const { return reserved_; }

 private:
  Kind kind_;
  uint64_t chunk_bytes_;
  std::vector<void*> chunks_;
  std::byte* cursor_ = nullptr;
  uint64_t left_ = 0;
  uint64_t taken_ = 0, reserved_ = 0;
};

// Copies host bytes into device memory (synchronously; load time only).
void upload(void* device_dst, const void* host_src, uint64_t bytes);
// Copies device bytes to the host (synchronously; tests and load time).
void download(void* host_dst, const void* device_src, uint64_t bytes);
// The same copies ordered on stream `s` (decode path): the host side must be pinned memory (a
// Kind::Pinned arena) or the copy silently turns synchronous.
void upload_async(void* device_dst, const void* pinned_src, uint64_t bytes, Stream s);
void download_async(void* pinned_dst, const void* device_src, uint64_t bytes, Stream s);
// A new non-blocking stream, and its end.
Stream create_stream();
void destroy_stream(Stream s);
void synchronize(Stream s);
// Whether everything queued on `s` has finished, without waiting.
bool stream_idle(Stream s);
// The calling thread's current device, and making `device` current. A model binds the device it
// was made on at every entry: the host may call several models, on several GPUs, from one thread.
int current_device();
void set_current_device(int device);

}  // namespace moepage::ds4::gpu
