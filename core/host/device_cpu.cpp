// The CPU device service. "Device" and pinned memory are both 64-byte aligned host memory (the
// CPU has nothing to pin against), work on a stream runs on the caller at submission, so every
// event is complete once recorded.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "host/device_service.hpp"
#include "host/log.hpp"

namespace moepage::host {
namespace {

constexpr uint64_t kAlignment = 64;

// Trivial objects so handles are distinct, non-null and can be destroyed.
struct CpuStream {
  int unused = 0;
};
struct CpuEvent {
  bool recorded = false;
};

mp_status alloc_aligned(void*, uint64_t bytes, void** out) {
  if (out == nullptr) return MP_ERR_INVALID_ARG;
  *out = nullptr;
  // aligned_alloc wants a multiple of the alignment; a zero-byte request still gets a pointer.
  const uint64_t rounded = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < bytes) return MP_ERR_OOM;  // overflowed
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) return MP_ERR_OOM;
  *out = p;
  return MP_OK;
}

mp_status free_aligned(void*, void* ptr) {
  std::free(ptr);
  return MP_OK;
}

// create and destroy of the opaque handle type Handle (mp_stream, mp_event) over Object.
template <class Object, class Handle>
mp_status create(void*, Handle* out) {
  if (out == nullptr) return MP_ERR_INVALID_ARG;
  auto* object = new (std::nothrow) Object;
  if (object == nullptr) return MP_ERR_OOM;
  *out = reinterpret_cast<Handle>(object);
  return MP_OK;
}
template <class Object, class Handle>
mp_status destroy(void*, Handle handle) {
  delete reinterpret_cast<Object*>(handle);
  return MP_OK;
}

mp_status stream_synchronize(void*, mp_stream) { return MP_OK; }  // work already ran

mp_status event_record(void*, mp_event event, mp_stream) {
  if (event == nullptr) return MP_ERR_INVALID_ARG;
  reinterpret_cast<CpuEvent*>(event)->recorded = true;
  return MP_OK;
}

mp_status stream_wait_event(void*, mp_stream, mp_event event) { return event == nullptr ? MP_ERR_INVALID_ARG : MP_OK; }

mp_status event_query(void*, mp_event event) { return event == nullptr ? MP_ERR_INVALID_ARG : MP_OK; }
mp_status event_synchronize(void*, mp_event event) { return event == nullptr ? MP_ERR_INVALID_ARG : MP_OK; }

mp_status copy(void*, void* dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return MP_OK;
  if (dst == nullptr || src == nullptr) return MP_ERR_INVALID_ARG;
  std::memcpy(dst, src, bytes);
  return MP_OK;
}

mp_status copy_async(void* ctx, void* dst, const void* src, uint64_t bytes, mp_stream) {
  return copy(ctx, dst, src, bytes);
}

mp_status memory_info(void* ctx, uint64_t* free_bytes, uint64_t* total_bytes);

// Host memory is the CPU device's memory: registering it is a no-op.
mp_status register_host(void*, void* ptr, uint64_t bytes) {
  return ptr == nullptr || bytes == 0 ? MP_ERR_INVALID_ARG : MP_OK;
}
mp_status unregister_host(void*, void* ptr) { return ptr == nullptr ? MP_ERR_INVALID_ARG : MP_OK; }

class CpuDeviceService final : public DeviceService {
 public:
  explicit CpuDeviceService(std::filesystem::path meminfo) : meminfo_(std::move(meminfo)) {
    table_.struct_size = sizeof table_;
    table_.kind = MP_DEVICE_CPU;
    table_.ctx = this;
    table_.alloc_device = &alloc_aligned;
    table_.free_device = &free_aligned;
    table_.alloc_pinned = &alloc_aligned;
    table_.free_pinned = &free_aligned;
    table_.stream_create = &create<CpuStream, mp_stream>;
    table_.stream_destroy = &destroy<CpuStream, mp_stream>;
    table_.stream_synchronize = &stream_synchronize;
    table_.event_create = &create<CpuEvent, mp_event>;
    table_.event_destroy = &destroy<CpuEvent, mp_event>;
    table_.event_record = &event_record;
    table_.stream_wait_event = &stream_wait_event;
    table_.event_query = &event_query;
    table_.event_synchronize = &event_synchronize;
    table_.copy_to_device_async = &copy_async;
    table_.copy_to_host = &copy;
    table_.memory_info = &memory_info;
    table_.register_host = &register_host;
    table_.unregister_host = &unregister_host;
  }
  const mp_device_service* table() const noexcept override { return &table_; }
  const std::filesystem::path& meminfo() const noexcept { return meminfo_; }

 private:
  std::filesystem::path meminfo_;
  mp_device_service table_{};
};

mp_status memory_info(void* ctx, uint64_t* free_bytes, uint64_t* total_bytes) {
  if (ctx == nullptr || free_bytes == nullptr || total_bytes == nullptr) return MP_ERR_INVALID_ARG;
  try {
    const MemInfo m = read_meminfo(static_cast<const CpuDeviceService*>(ctx)->meminfo());
    *free_bytes = m.available;
    *total_bytes = m.total;
    return MP_OK;
  } catch (const std::exception& e) {
    // The table has no message channel: the reason goes to the log, the caller gets MP_ERR_IO.
    try {
      logger("device")->error("{}", e.what());
    } catch (...) {
    }
    return MP_ERR_IO;
  }
}

}  // namespace

std::unique_ptr<DeviceService> make_cpu_device_service(std::filesystem::path meminfo) {
  return std::make_unique<CpuDeviceService>(std::move(meminfo));
}

MemInfo read_meminfo(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot be read, so free memory is unknown");
  MemInfo m;
  bool have_available = false;
  bool have_total = false;
  std::string line;
  while (std::getline(in, line)) {
    // Lines look like "MemAvailable:   12345678 kB".
    std::istringstream fields(line);
    std::string key, unit;
    uint64_t value = 0;
    if (!(fields >> key >> value)) continue;
    fields >> unit;
    const uint64_t scale = unit == "kB" ? 1024 : 1;
    if (key == "MemAvailable:") {
      m.available = value * scale;
      have_available = true;
    } else if (key == "MemTotal:") {
      m.total = value * scale;
      have_total = true;
    }
  }
  if (!have_total) throw std::runtime_error(path.string() + ": no MemTotal line");
  if (!have_available) throw std::runtime_error(path.string() + ": no MemAvailable line");
  return m;
}

}  // namespace moepage::host
