#include "conform/checking_device.hpp"

#include <cstring>

namespace moepage::conform {

CheckingDevice::CheckingDevice(const mp_host_api* host)
    : inner_(host->device), defer_copies_(host->device != nullptr && host->device->kind == MP_DEVICE_CPU) {
  host_ = *host;
  table_ = *inner_;
  table_.struct_size = sizeof table_;
  table_.ctx = this;
  install();
  host_.device = &table_;
}

CheckingDevice::~CheckingDevice() {
  // Whatever is still queued ran on a GPU before its memory was freed; nothing waits for it now.
  std::lock_guard lock(mutex_);
  queued_.clear();
}

std::vector<std::string> CheckingDevice::unpinned_copies() const {
  std::lock_guard lock(mutex_);
  return unpinned_;
}

bool CheckingDevice::is_pinned(const void* src, uint64_t bytes) const {
  const char* p = static_cast<const char*>(src);
  auto it = pinned_.upper_bound(p);
  if (it == pinned_.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

mp_status CheckingDevice::run_queued(mp_stream stream) {
  std::vector<Copy> copies;
  {
    std::lock_guard lock(mutex_);
    auto it = queued_.find(stream);
    if (it == queued_.end()) return MP_OK;
    copies.swap(it->second);
  }
  for (const Copy& c : copies) {
    const mp_status s = inner_->copy_to_device_async(inner_->ctx, c.dst, c.src, c.bytes, stream);
    if (s != MP_OK) return s;
  }
  return MP_OK;
}

void CheckingDevice::install() {
  // Calls the wrapper does not watch go to the inner service with the inner context.
  table_.alloc_device = [](void* ctx, uint64_t bytes, void** out) {
    return of(ctx).inner_->alloc_device(of(ctx).inner_->ctx, bytes, out);
  };
  table_.stream_create = [](void* ctx, mp_stream* out) {
    return of(ctx).inner_->stream_create(of(ctx).inner_->ctx, out);
  };
  table_.event_create = [](void* ctx, mp_event* out) { return of(ctx).inner_->event_create(of(ctx).inner_->ctx, out); };
  table_.copy_to_host = [](void* ctx, void* dst, const void* src, uint64_t bytes) {
    return of(ctx).inner_->copy_to_host(of(ctx).inner_->ctx, dst, src, bytes);
  };
  table_.memory_info = [](void* ctx, uint64_t* free_bytes, uint64_t* total_bytes) {
    return of(ctx).inner_->memory_info(of(ctx).inner_->ctx, free_bytes, total_bytes);
  };
  watch_pinned();
  watch_copies();
}

// Memory a copy may come from: alloc_pinned's, and (1.6) what register_host registered.
void CheckingDevice::watch_pinned() {
  table_.alloc_pinned = [](void* ctx, uint64_t bytes, void** out) -> mp_status {
    CheckingDevice& d = of(ctx);
    const mp_status s = d.inner_->alloc_pinned(d.inner_->ctx, bytes, out);
    if (s != MP_OK || out == nullptr || *out == nullptr) return s;
    std::lock_guard lock(d.mutex_);
    d.pinned_[static_cast<const char*>(*out)] = bytes;
    return s;
  };
  // Freeing pinned or device memory waits for the device on a GPU: queued copies run first.
  table_.free_pinned = [](void* ctx, void* ptr) -> mp_status {
    CheckingDevice& d = of(ctx);
    d.flush_all();
    {
      std::lock_guard lock(d.mutex_);
      d.pinned_.erase(static_cast<const char*>(ptr));
    }
    return d.inner_->free_pinned(d.inner_->ctx, ptr);
  };
  // Registered memory counts as pinned while it is registered (1.6; absent in an older host).
  table_.register_host = [](void* ctx, void* ptr, uint64_t bytes) -> mp_status {
    CheckingDevice& d = of(ctx);
    if (!MP_HAS_FIELD(d.inner_, mp_device_service, register_host) || d.inner_->register_host == nullptr)
      return MP_ERR_UNSUPPORTED;
    const mp_status s = d.inner_->register_host(d.inner_->ctx, ptr, bytes);
    if (s != MP_OK) return s;
    std::lock_guard lock(d.mutex_);
    d.pinned_[static_cast<const char*>(ptr)] = bytes;
    return s;
  };
  table_.unregister_host = [](void* ctx, void* ptr) -> mp_status {
    CheckingDevice& d = of(ctx);
    if (!MP_HAS_FIELD(d.inner_, mp_device_service, unregister_host) || d.inner_->unregister_host == nullptr)
      return MP_ERR_UNSUPPORTED;
    d.flush_all();
    {
      std::lock_guard lock(d.mutex_);
      d.pinned_.erase(static_cast<const char*>(ptr));
    }
    return d.inner_->unregister_host(d.inner_->ctx, ptr);
  };
  table_.free_device = [](void* ctx, void* ptr) -> mp_status {
    CheckingDevice& d = of(ctx);
    d.flush_all();
    return d.inner_->free_device(d.inner_->ctx, ptr);
  };
}

// Copies from memory that is not pinned, and on the CPU device copies deferred to their stream's
// synchronisation.
void CheckingDevice::watch_copies() {
  table_.copy_to_device_async = [](void* ctx, void* dst, const void* src, uint64_t bytes,
                                   mp_stream stream) -> mp_status {
    CheckingDevice& d = of(ctx);
    {
      std::lock_guard lock(d.mutex_);
      if (bytes > 0 && !d.is_pinned(src, bytes)) {
        // A pageable copy is synchronous on a GPU: it happens now, and is recorded as a fault.
        d.unpinned_.push_back(std::to_string(bytes) +
                              " bytes copied from memory neither from alloc_pinned nor registered with register_host");
      } else if (d.defer_copies_ && bytes > 0) {
        d.queued_[stream].push_back(Copy{dst, src, bytes});
        return MP_OK;
      }
    }
    return d.inner_->copy_to_device_async(d.inner_->ctx, dst, src, bytes, stream);
  };
  table_.stream_synchronize = [](void* ctx, mp_stream stream) -> mp_status {
    CheckingDevice& d = of(ctx);
    if (const mp_status s = d.run_queued(stream); s != MP_OK) return s;
    return d.inner_->stream_synchronize(d.inner_->ctx, stream);
  };
  table_.stream_destroy = [](void* ctx, mp_stream stream) -> mp_status {
    CheckingDevice& d = of(ctx);
    d.run_queued(stream);  // work queued on a stream still completes after it is destroyed
    return d.inner_->stream_destroy(d.inner_->ctx, stream);
  };
  table_.event_record = [](void* ctx, mp_event event, mp_stream stream) -> mp_status {
    CheckingDevice& d = of(ctx);
    {
      std::lock_guard lock(d.mutex_);
      d.recorded_on_[event] = stream;
    }
    return d.inner_->event_record(d.inner_->ctx, event, stream);
  };
  // Waiting for an event (or finding it complete) runs the copies of the stream it was
  // recorded on; so does making another stream wait for it (that stream's later work is, on the
  // CPU device, the host reading the memory at once).
  table_.event_synchronize = [](void* ctx, mp_event event) -> mp_status {
    CheckingDevice& d = of(ctx);
    if (const mp_status s = d.flush_event(event); s != MP_OK) return s;
    return d.inner_->event_synchronize(d.inner_->ctx, event);
  };
  table_.event_query = [](void* ctx, mp_event event) -> mp_status {
    CheckingDevice& d = of(ctx);
    if (const mp_status s = d.flush_event(event); s != MP_OK) return s;
    return d.inner_->event_query(d.inner_->ctx, event);
  };
  table_.stream_wait_event = [](void* ctx, mp_stream stream, mp_event event) -> mp_status {
    CheckingDevice& d = of(ctx);
    if (const mp_status s = d.flush_event(event); s != MP_OK) return s;
    return d.inner_->stream_wait_event(d.inner_->ctx, stream, event);
  };
  table_.event_destroy = [](void* ctx, mp_event event) -> mp_status {
    CheckingDevice& d = of(ctx);
    {
      std::lock_guard lock(d.mutex_);
      d.recorded_on_.erase(event);
    }
    return d.inner_->event_destroy(d.inner_->ctx, event);
  };
}

void CheckingDevice::flush_all() {
  std::vector<mp_stream> streams;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [stream, copies] : queued_) streams.push_back(stream);
  }
  for (mp_stream s : streams) run_queued(s);
}

mp_status CheckingDevice::flush_event(mp_event event) {
  mp_stream stream = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = recorded_on_.find(event);
    if (it == recorded_on_.end()) return MP_OK;
    stream = it->second;
  }
  return run_queued(stream);
}

}  // namespace moepage::conform
