/* moepage plugin ABI v1: the services the host passes into every plugin.
 * Plugins never link the core, a logger or a GPU SDK: memory, streams, events, copies, logging
 * and the clock all come through these tables. Every struct starts with struct_size and only
 * ever grows at its end; read a field only if it lies inside struct_size. */
#ifndef MOEPAGE_HOST_API_H
#define MOEPAGE_HOST_API_H
#include <stddef.h>
#include <stdint.h>
#include "moepage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MP_ABI_MAJOR 1
#define MP_ABI_MINOR 3 /* 1.1: mp_arch_vtable.stats; 1.2: mp_arch_vtable.forward_greedy;
                         1.3: mp_trace_event.kind and .rank (predictions in traces) */

/* True when `field` of the struct at `ptr` lies inside the size the other side declared. */
#define MP_HAS_FIELD(ptr, type, field) \
  ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

typedef enum mp_log_level {
  MP_LOG_TRACE = 0,
  MP_LOG_DEBUG = 1,
  MP_LOG_INFO = 2,
  MP_LOG_WARN = 3,
  MP_LOG_ERROR = 4
} mp_log_level;

typedef enum mp_device_kind {
  MP_DEVICE_CPU = 0, /* "device" memory is host memory; streams run work in order on the caller */
  MP_DEVICE_HIP = 1  /* a HIP device (AMD, or NVIDIA through the project's HIP mapping) */
} mp_device_kind;

/* On MP_DEVICE_HIP an mp_stream is the native hipStream_t and an mp_event the hipEvent_t, so
 * kernel-owning plugins may launch on it. */
typedef struct mp_stream_s* mp_stream; /* opaque; NULL is the device's default compute stream */
typedef struct mp_event_s* mp_event;   /* opaque */

/* The core's device service. On the CPU device allocations are host memory, copies are memcpy
 * done at submission, and events complete when recorded. */
typedef struct mp_device_service {
  uint32_t struct_size;
  int32_t kind; /* mp_device_kind */
  void* ctx;
  mp_status (*alloc_device)(void* ctx, uint64_t bytes, void** out);
  mp_status (*free_device)(void* ctx, void* ptr);
  mp_status (*alloc_pinned)(void* ctx, uint64_t bytes, void** out); /* page-locked host memory */
  mp_status (*free_pinned)(void* ctx, void* ptr);
  mp_status (*stream_create)(void* ctx, mp_stream* out);
  mp_status (*stream_destroy)(void* ctx, mp_stream stream);
  mp_status (*stream_synchronize)(void* ctx, mp_stream stream);
  mp_status (*event_create)(void* ctx, mp_event* out);
  mp_status (*event_destroy)(void* ctx, mp_event event);
  mp_status (*event_record)(void* ctx, mp_event event, mp_stream stream);
  mp_status (*stream_wait_event)(void* ctx, mp_stream stream, mp_event event);
  mp_status (*event_query)(void* ctx, mp_event event); /* MP_OK when done, MP_PENDING otherwise */
  mp_status (*event_synchronize)(void* ctx, mp_event event);
  /* Host -> device copy ordered on `stream`; `src` must be pinned for the copy to be asynchronous. */
  mp_status (*copy_to_device_async)(void* ctx, void* dst, const void* src, uint64_t bytes, mp_stream stream);
  mp_status (*copy_to_host)(void* ctx, void* dst, const void* src, uint64_t bytes); /* synchronous */
  /* Free and total bytes of device memory; on the CPU device, MemAvailable and MemTotal. */
  mp_status (*memory_info)(void* ctx, uint64_t* free_bytes, uint64_t* total_bytes);
} mp_device_service;

typedef struct mp_host_api {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  void* ctx;
  /* Logs one line through the host's logger; `component` is the plugin's name. */
  void (*log)(void* ctx, int32_t level, const char* component, const char* message);
  /* Monotonic clock in nanoseconds. */
  uint64_t (*now_ns)(void* ctx);
  const mp_device_service* device;
} mp_host_api;

#ifdef __cplusplus
}
#endif
#endif
