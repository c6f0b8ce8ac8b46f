// The HIP device service: device and pinned memory, streams, events and copies on one GPU, over
// the HIP runtime names of gpu/hip_compat.hpp (HIP on AMD, the CUDA runtime on NVIDIA).
// Handles are the runtime's own: an mp_stream is a hipStream_t and an mp_event a hipEvent_t, so
// kernel code can use them directly. Every entry is noexcept and returns a status; the runtime's
// message goes to a per-thread last error and to the "device" logger.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "gpu/hip_compat.hpp"
#include "host/device_hip_log.hpp"
#include "host/device_service.hpp"

namespace moepage::host {
namespace {

// Per thread: transports call the service from their own threads.
thread_local std::string t_last_error;

hipStream_t native(mp_stream s) { return reinterpret_cast<hipStream_t>(s); }
hipEvent_t native(mp_event e) { return reinterpret_cast<hipEvent_t>(e); }

// Records a failed runtime call as the thread's last error and logs it. The runtime also keeps
// the code as its own per-thread last error; clear it, so a later kernel-launch check does not
// report a failure the service already returned.
mp_status fail(hipError_t e, const std::string& what) noexcept {
  (void)hipGetLastError();
  const mp_status status = e == hipErrorOutOfMemory ? MP_ERR_OOM : MP_ERR_DEVICE;
  try {
    t_last_error = what + ": " + hipGetErrorName(e) + ": " + hipGetErrorString(e);
    log_device_failure(status == MP_ERR_OOM, t_last_error);
  } catch (...) {
  }
  return status;
}

mp_status invalid(const char* what) noexcept {
  try {
    t_last_error = what;
  } catch (...) {
  }
  return MP_ERR_INVALID_ARG;
}

std::string bytes_text(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

// Two defaults of the GPU runtime let a kernel that waits for the host (arch.slot_table's stall,
// which spins until the host's reply lands) wait for itself; they are read when the runtime
// starts, so this runs before any runtime call of the process, and a value the user set is kept.
// - Hardware queues: the runtime spreads streams over a few (CUDA: 8 by default, up to 32; ROCm:
//   4), and work of two streams that share one runs in the order it was queued. The host's reply
//   needs copies on other streams (the transport's, the arch's reply stream); one sharing the
//   compute stream's queue would wait behind the stall. 32 queues take more streams than the engine
//   and its shipped transports make at their defaults (ROCm's 16 is a guess, not measured).
// - Lazy loading: CUDA 12 and later load a kernel's code at its first launch, and a load may wait
//   for the whole device to be idle. The host queues a slot-table step's later layers while an
//   earlier layer's stall may already spin, so the first launch of any kernel then (the first
//   step, a compressor's first emission) would wait for the stall, which waits for the host.
//   Loading every kernel when the runtime starts costs start-up time once instead. ROCm defers
//   code objects too; it is turned off there for the same reason (not measured on AMD).
void prepare_runtime_environment() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(MOEPAGE_GPU_NVIDIA)
    (void)setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
    (void)setenv("CUDA_MODULE_LOADING", "EAGER", 0);
#else
    (void)setenv("GPU_MAX_HW_QUEUES", "16", 0);
    (void)setenv("HIP_ENABLE_DEFERRED_LOADING", "0", 0);
#endif
  });
}

class HipDeviceService final : public DeviceService {
 public:
  explicit HipDeviceService(int device_index) : device_(device_index) {
    prepare_runtime_environment();
    int count = 0;
    const hipError_t counted = hipGetDeviceCount(&count);
    if (counted != hipSuccess) {
      (void)hipGetLastError();
      throw std::runtime_error(std::string("no usable HIP GPU: hipGetDeviceCount: ") + hipGetErrorString(counted));
    }
    if (device_index < 0 || device_index >= count) {
      throw std::runtime_error("HIP device " + std::to_string(device_index) + " does not exist (" +
                               std::to_string(count) + " GPU(s) visible)");
    }
    check_or_throw(hipSetDevice(device_), "hipSetDevice");
    // Non-blocking: the legacy NULL stream would serialise with every other stream, including
    // the transports' copy streams, and defeat overlapping expert reads with compute.
    check_or_throw(hipStreamCreateWithFlags(&compute_, hipStreamNonBlocking), "hipStreamCreateWithFlags (compute)");
    fill_table();
  }
  ~HipDeviceService() override {
    // Work still queued may write into memory its owner is about to free; let it land first.
    (void)hipStreamSynchronize(compute_);
    (void)hipStreamDestroy(compute_);
    (void)hipGetLastError();
  }
  HipDeviceService(const HipDeviceService&) = delete;
  HipDeviceService& operator=(const HipDeviceService&) = delete;

  const mp_device_service* table() const noexcept override { return &table_; }
  std::string last_error() const override { return t_last_error; }

 private:
  static HipDeviceService& self(void* ctx) { return *static_cast<HipDeviceService*>(ctx); }

  void check_or_throw(hipError_t e, const char* what) const {
    if (e == hipSuccess) return;
    (void)hipGetLastError();
    throw std::runtime_error("HIP device " + std::to_string(device_) + ": " + what + ": " + hipGetErrorString(e));
  }

  // The runtime's current device is per thread; calls that create something must make it ours.
  hipError_t bind() const { return hipSetDevice(device_); }

  hipStream_t stream_of(mp_stream s) const { return s == nullptr ? compute_ : native(s); }

  std::string where() const { return " on device " + std::to_string(device_); }

  static mp_status alloc_device(void* ctx, uint64_t bytes, void** out) noexcept {
    if (out == nullptr) return invalid("alloc_device: out is null");
    *out = nullptr;
    const HipDeviceService& s = self(ctx);
    if (hipError_t e = s.bind(); e != hipSuccess) return fail(e, "hipSetDevice" + s.where());
    // A zero-byte request still gets a distinct, non-null pointer, as on the CPU device.
    if (hipError_t e = hipMalloc(out, std::max<uint64_t>(bytes, 1)); e != hipSuccess) {
      *out = nullptr;
      return fail(e, "hipMalloc of " + bytes_text(bytes) + s.where());
    }
    return MP_OK;
  }

  static mp_status free_device(void* ctx, void* ptr) noexcept {
    if (ptr == nullptr) return MP_OK;
    const HipDeviceService& s = self(ctx);
    if (hipError_t e = hipFree(ptr); e != hipSuccess) return fail(e, "hipFree" + s.where());
    return MP_OK;
  }

  static mp_status alloc_pinned(void* ctx, uint64_t bytes, void** out) noexcept {
    if (out == nullptr) return invalid("alloc_pinned: out is null");
    *out = nullptr;
    const HipDeviceService& s = self(ctx);
    if (hipError_t e = s.bind(); e != hipSuccess) return fail(e, "hipSetDevice" + s.where());
    // Portable: a transport thread may copy from it with any current device.
    if (hipError_t e = hipHostMalloc(out, std::max<uint64_t>(bytes, 1), hipHostMallocPortable); e != hipSuccess) {
      *out = nullptr;
      return fail(e, "hipHostMalloc (pinned) of " + bytes_text(bytes));
    }
    return MP_OK;
  }

  static mp_status free_pinned(void*, void* ptr) noexcept {
    if (ptr == nullptr) return MP_OK;
    if (hipError_t e = hipHostFree(ptr); e != hipSuccess) return fail(e, "hipHostFree (pinned)");
    return MP_OK;
  }

  static mp_status stream_create(void* ctx, mp_stream* out) noexcept {
    if (out == nullptr) return invalid("stream_create: out is null");
    *out = nullptr;
    const HipDeviceService& s = self(ctx);
    if (hipError_t e = s.bind(); e != hipSuccess) return fail(e, "hipSetDevice" + s.where());
    hipStream_t stream = nullptr;
    // Non-blocking for the same reason as the compute stream: copy streams must never wait on
    // the legacy NULL stream.
    if (hipError_t e = hipStreamCreateWithFlags(&stream, hipStreamNonBlocking); e != hipSuccess)
      return fail(e, "hipStreamCreateWithFlags" + s.where());
    *out = reinterpret_cast<mp_stream>(stream);
    return MP_OK;
  }

  static mp_status stream_destroy(void*, mp_stream stream) noexcept {
    // NULL names the service's compute stream, which the service owns.
    if (stream == nullptr) return MP_OK;
    if (hipError_t e = hipStreamDestroy(native(stream)); e != hipSuccess) return fail(e, "hipStreamDestroy");
    return MP_OK;
  }

  static mp_status stream_synchronize(void* ctx, mp_stream stream) noexcept {
    if (hipError_t e = hipStreamSynchronize(self(ctx).stream_of(stream)); e != hipSuccess)
      return fail(e, "hipStreamSynchronize" + self(ctx).where());
    return MP_OK;
  }

  static mp_status event_create(void* ctx, mp_event* out) noexcept {
    if (out == nullptr) return invalid("event_create: out is null");
    *out = nullptr;
    const HipDeviceService& s = self(ctx);
    if (hipError_t e = s.bind(); e != hipSuccess) return fail(e, "hipSetDevice" + s.where());
    hipEvent_t event = nullptr;
    // Timing off: events here only order work, and timing events cost a clock read per record.
    if (hipError_t e = hipEventCreateWithFlags(&event, hipEventDisableTiming); e != hipSuccess)
      return fail(e, "hipEventCreateWithFlags" + s.where());
    *out = reinterpret_cast<mp_event>(event);
    return MP_OK;
  }

  static mp_status event_destroy(void*, mp_event event) noexcept {
    if (event == nullptr) return MP_OK;
    if (hipError_t e = hipEventDestroy(native(event)); e != hipSuccess) return fail(e, "hipEventDestroy");
    return MP_OK;
  }

  static mp_status event_record(void* ctx, mp_event event, mp_stream stream) noexcept {
    if (event == nullptr) return invalid("event_record: event is null");
    if (hipError_t e = hipEventRecord(native(event), self(ctx).stream_of(stream)); e != hipSuccess)
      return fail(e, "hipEventRecord" + self(ctx).where());
    return MP_OK;
  }

  static mp_status stream_wait_event(void* ctx, mp_stream stream, mp_event event) noexcept {
    if (event == nullptr) return invalid("stream_wait_event: event is null");
    if (hipError_t e = hipStreamWaitEvent(self(ctx).stream_of(stream), native(event), 0); e != hipSuccess)
      return fail(e, "hipStreamWaitEvent" + self(ctx).where());
    return MP_OK;
  }

  static mp_status event_query(void* ctx, mp_event event) noexcept {
    if (event == nullptr) return invalid("event_query: event is null");
    const hipError_t e = hipEventQuery(native(event));
    if (e == hipSuccess) return MP_OK;
    if (e == hipErrorNotReady) {
      // "Not ready" is an answer, not a failure: make sure no runtime keeps it as the last error.
      if (hipPeekAtLastError() == hipErrorNotReady) (void)hipGetLastError();
      return MP_PENDING;
    }
    return fail(e, "hipEventQuery" + self(ctx).where());
  }

  static mp_status event_synchronize(void* ctx, mp_event event) noexcept {
    if (event == nullptr) return invalid("event_synchronize: event is null");
    if (hipError_t e = hipEventSynchronize(native(event)); e != hipSuccess)
      return fail(e, "hipEventSynchronize" + self(ctx).where());
    return MP_OK;
  }

  static mp_status copy_to_device_async(void* ctx, void* dst, const void* src, uint64_t bytes,
                                        mp_stream stream) noexcept {
    if (bytes == 0) return MP_OK;
    if (dst == nullptr || src == nullptr) return invalid("copy_to_device_async: null pointer");
    // Default: the runtime tells pinned host from device pointers (unified addressing), so a
    // device-to-device copy through this call is also right.
    if (hipError_t e = hipMemcpyAsync(dst, src, bytes, hipMemcpyDefault, self(ctx).stream_of(stream)); e != hipSuccess)
      return fail(e, "hipMemcpyAsync of " + bytes_text(bytes) + self(ctx).where());
    return MP_OK;
  }

  static mp_status copy_to_host(void* ctx, void* dst, const void* src, uint64_t bytes) noexcept {
    if (bytes == 0) return MP_OK;
    if (dst == nullptr || src == nullptr) return invalid("copy_to_host: null pointer");
    // On the compute stream, then wait: a plain hipMemcpy goes on the legacy NULL stream, which
    // does not wait for the (non-blocking) compute stream, so it could read results early.
    const HipDeviceService& s = self(ctx);
    if (hipError_t e = hipMemcpyAsync(dst, src, bytes, hipMemcpyDefault, s.compute_); e != hipSuccess)
      return fail(e, "hipMemcpyAsync (to host) of " + bytes_text(bytes) + s.where());
    if (hipError_t e = hipStreamSynchronize(s.compute_); e != hipSuccess)
      return fail(e, "hipStreamSynchronize after a copy to host" + s.where());
    return MP_OK;
  }

  static mp_status memory_info(void* ctx, uint64_t* free_bytes, uint64_t* total_bytes) noexcept {
    if (free_bytes == nullptr || total_bytes == nullptr) return invalid("memory_info: null output");
    const HipDeviceService& s = self(ctx);
    if (hipError_t e = s.bind(); e != hipSuccess) return fail(e, "hipSetDevice" + s.where());
    size_t free_now = 0, total = 0;
    if (hipError_t e = hipMemGetInfo(&free_now, &total); e != hipSuccess) return fail(e, "hipMemGetInfo" + s.where());
    *free_bytes = free_now;
    *total_bytes = total;
    return MP_OK;
  }

  // Read-only: the device only copies out of it (a PROT_READ file mapping is registrable so).
  static mp_status register_host(void* ctx, void* ptr, uint64_t bytes) noexcept {
    if (ptr == nullptr || bytes == 0) return invalid("register_host: null pointer or zero bytes");
    const HipDeviceService& s = self(ctx);
    if (hipError_t e = s.bind(); e != hipSuccess) return fail(e, "hipSetDevice" + s.where());
    if (hipError_t e = hipHostRegister(ptr, bytes, MP_HOST_REGISTER_READ_ONLY); e != hipSuccess)
      return fail(e, "hipHostRegister (read-only) of " + bytes_text(bytes) + s.where());
    return MP_OK;
  }

  static mp_status unregister_host(void* ctx, void* ptr) noexcept {
    if (ptr == nullptr) return invalid("unregister_host: null pointer");
    if (hipError_t e = hipHostUnregister(ptr); e != hipSuccess) return fail(e, "hipHostUnregister" + self(ctx).where());
    return MP_OK;
  }

  void fill_table() {
    table_.struct_size = sizeof table_;
    table_.kind = MP_DEVICE_HIP;
    table_.ctx = this;
    table_.alloc_device = &alloc_device;
    table_.free_device = &free_device;
    table_.alloc_pinned = &alloc_pinned;
    table_.free_pinned = &free_pinned;
    table_.stream_create = &stream_create;
    table_.stream_destroy = &stream_destroy;
    table_.stream_synchronize = &stream_synchronize;
    table_.event_create = &event_create;
    table_.event_destroy = &event_destroy;
    table_.event_record = &event_record;
    table_.stream_wait_event = &stream_wait_event;
    table_.event_query = &event_query;
    table_.event_synchronize = &event_synchronize;
    table_.copy_to_device_async = &copy_to_device_async;
    table_.copy_to_host = &copy_to_host;
    table_.memory_info = &memory_info;
    table_.register_host = &register_host;
    table_.unregister_host = &unregister_host;
  }

  int device_;
  hipStream_t compute_ = nullptr;
  mp_device_service table_{};
};

}  // namespace

std::unique_ptr<DeviceService> make_hip_device_service(int device_index) {
  return std::make_unique<HipDeviceService>(device_index);
}

int hip_device_count() noexcept {
  prepare_runtime_environment();
  int count = 0;
  if (hipGetDeviceCount(&count) != hipSuccess) {
    (void)hipGetLastError();
    return 0;
  }
  return count;
}

bool hip_build_is_amd() noexcept {
#if defined(MOEPAGE_GPU_NVIDIA)
  return false;
#else
  return true;
#endif
}

std::string describe_hip_devices() noexcept {
#if defined(MOEPAGE_GPU_NVIDIA)
  const char* const backend = "hip-nvidia build; ";
#else
  const char* const backend = "hip-amd build; ";
#endif
  prepare_runtime_environment();
  try {
    const std::string build = backend;
    int count = 0;
    const hipError_t e = hipGetDeviceCount(&count);
    if (e != hipSuccess) {
      (void)hipGetLastError();
      return build + "no usable GPU: " + hipGetErrorString(e);
    }
    if (count == 0) return build + "no GPU visible";
    std::string text = build + std::to_string(count) + " GPU(s):";
    for (int i = 0; i < count; ++i) {
      hipDeviceProp_t prop{};
      if (hipGetDeviceProperties(&prop, i) != hipSuccess) {
        (void)hipGetLastError();
        text += " device " + std::to_string(i) + " (properties unreadable);";
        continue;
      }
      char gib[32];
      std::snprintf(gib, sizeof gib, "%.0f GiB", static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
      text += std::string(" ") + std::to_string(i) + ": " + prop.name + " (" + gib + ")" + (i + 1 < count ? ";" : "");
    }
    return text;
  } catch (...) {
    return "GPU description failed";
  }
}

}  // namespace moepage::host
