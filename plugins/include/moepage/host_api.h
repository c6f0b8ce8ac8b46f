/* moepage plugin ABI v1: the services the host passes into every plugin.
 * Plugins never link the core, a logger or a GPU SDK: memory, streams, events, copies, logging
 * and the clock all come through these tables. Every struct starts with struct_size and only
 * ever grows at its end; read a field only if it lies inside struct_size. */
#ifndef MOEPAGE_HOST_API_H
#define MOEPAGE_HOST_API_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "moepage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MP_ABI_MAJOR 1
/* The minors: 1.1 mp_arch_vtable.stats; 1.2 mp_arch_vtable.forward_greedy; 1.3 mp_trace_event.kind
 * and .rank (predictions in traces); 1.4 mp_transport_vtable.wait_result and .poll_result (which
 * request failed, as data), the conventions below written down and checked; 1.5 the split acquire
 * (mp_pager_vtable.acquire_start, .acquire_await, .acquire_finish; mp_acquire_result.pending);
 * 1.6 mp_device_service.register_host and .unregister_host (copies straight from mapped files);
 * 1.7 mp_collective and mp_arch_vtable.join_ranks (expert parallelism: arch.h mp_expert_parallel);
 * 1.8 mp_pager_vtable.fixed_slots (slots that never move: the architecture routes on the device);
 * 1.9 mp_collective.all_reduce_sum_f32_device (the ranks' sum in device memory, on a stream) and
 * mp_arch_stats.collective_calls and .collective_ns; 1.10 mp_pager_vtable.linear_predictor and
 * .observe_scores (a predictor the architecture evaluates on the device); 1.11
 * mp_pager_vtable.residency (a paged layer's valid slots, looked up on the device) and
 * mp_arch_stats.slot_lookups and .slot_stalls. */
#define MP_ABI_MINOR 11

/* The oldest host minor a plugin runs on. A plugin that needs nothing newer than, say, 1.0
 * defines MP_PLUGIN_ABI_MINOR to 0 before including any moepage header; the SDK then writes 0
 * into its manifest and every 1.x host loads it. It must then treat every field newer than that
 * minor as optional (MP_HAS_FIELD, non-NULL) and provide every callback the minor requires.
 * Default: the headers' own minor. */
#ifndef MP_PLUGIN_ABI_MINOR
#define MP_PLUGIN_ABI_MINOR MP_ABI_MINOR
#endif
#if MP_PLUGIN_ABI_MINOR > MP_ABI_MINOR || MP_PLUGIN_ABI_MINOR < 0
#error "MP_PLUGIN_ABI_MINOR must lie between 0 and MP_ABI_MINOR"
#endif

/* True when `field` of the struct at `ptr` lies inside the size the other side declared. */
#define MP_HAS_FIELD(ptr, type, field) \
  ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* The struct_size conventions, for every struct that crosses the boundary:
 *  - Input (the sender fills it, e.g. create args, read requests, option tables): the sender sets
 *    struct_size to its own sizeof; the receiver reads a field only when MP_HAS_FIELD says it is
 *    inside, and treats the fields past it as zero (mp_read_struct does exactly that).
 *  - Output (the caller provides it, the callee fills it, e.g. stats, describe, acquire results):
 *    the caller sets struct_size; the callee writes only the bytes inside it and never changes
 *    struct_size itself (mp_write_struct does exactly that). struct_size 0, or smaller than the
 *    struct_size field, is MP_ERR_INVALID_ARG and nothing is written: 0 never means "full size".
 *  - Arrays of versioned structs (mp_read_request[n], mp_option_def[n], mp_option_value[n],
 *    mp_expert_segment[n], mp_component_descriptor[n]): the element stride is the struct_size of
 *    the first element, and every element carries that same struct_size, so a newer sender's
 *    larger elements are walked correctly (mp_array_element). */

/* Copies the sender's struct `in` into `full` (full_size bytes, the receiver's sizeof), zeroing
 * what the sender's struct_size does not cover; full->struct_size becomes full_size. Returns
 * MP_ERR_INVALID_ARG (and zeroes `full`) when `in` is NULL or its struct_size is smaller than
 * `min_size`, the struct's size in the oldest minor the receiver accepts. */
static inline mp_status mp_read_struct(void* full, uint32_t full_size, const void* in, uint32_t min_size) {
  uint32_t in_size = 0;
  memset(full, 0, full_size);
  if (in != NULL) memcpy(&in_size, in, sizeof in_size);
  if (in == NULL || in_size < min_size || in_size < sizeof(uint32_t)) return MP_ERR_INVALID_ARG;
  memcpy(full, in, in_size < full_size ? in_size : full_size);
  memcpy(full, &full_size, sizeof full_size);
  return MP_OK;
}

/* Writes the callee's complete struct `full` (full_size bytes) into the caller's `out`: only the
 * bytes inside out's struct_size, never struct_size itself. */
static inline mp_status mp_write_struct(void* out, const void* full, uint32_t full_size) {
  uint32_t out_size = 0;
  if (out == NULL || full == NULL) return MP_ERR_INVALID_ARG;
  memcpy(&out_size, out, sizeof out_size);
  if (out_size < sizeof(uint32_t)) return MP_ERR_INVALID_ARG;
  if (out_size > full_size) out_size = full_size;
  memcpy((char*)out + sizeof(uint32_t), (const char*)full + sizeof(uint32_t), out_size - sizeof(uint32_t));
  return MP_OK;
}

/* Element `index` of an array of versioned structs whose first element is at `base` (see the
 * stride rule above). The caller checks the element's struct_size before reading it. */
static inline const void* mp_array_element(const void* base, uint32_t index) {
  uint32_t stride = 0;
  memcpy(&stride, base, sizeof stride);
  return (const char*)base + (size_t)stride * index;
}

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
  /* 1.6, optional (check MP_HAS_FIELD and NULL): registers `bytes` of host memory at `ptr`, which
   * the device will only read (a read-only file mapping, say), so that copy_to_device_async from
   * it runs as from pinned memory: no staging copy. Its pages stay resident and locked until
   * unregister_host(ptr), which takes the pointer register_host was given. Registering costs time
   * and locks memory: do it once, at open. On the CPU device both succeed and do nothing. */
  mp_status (*register_host)(void* ctx, void* ptr, uint64_t bytes);
  mp_status (*unregister_host)(void* ctx, void* ptr);
} mp_device_service;

/* 1.7: one rank's view of a group of ranks, a service the host hands an architecture through
 * mp_arch_vtable.join_ranks. The host implements it (threads of one process today; a library such
 * as NCCL later, behind the same table). Every rank must make the same calls in the same order. */
typedef struct mp_collective {
  uint32_t struct_size;
  uint32_t rank; /* this rank, 0 .. size-1 */
  uint32_t size; /* ranks in the group */
  void* ctx;
  /* data[0..n) (host memory) becomes the sum over the ranks of every rank's data[0..n), added in
   * rank order, so every rank gets the same bits. Blocks until every rank called it. Fails with
   * MP_ERR_INTERNAL once any rank aborted (last_error then gives that rank's reason), and with
   * MP_ERR_INVALID_ARG when n is larger than the host sized the group for (never after a
   * successful first call of the same n). */
  mp_status (*all_reduce_sum_f32)(void* ctx, float* data, uint64_t n);
  /* This rank failed (why: one line): every rank blocked in, or later entering, the collective
   * fails instead of waiting for this one forever. */
  void (*abort)(void* ctx, const char* why);
  /* The message of this thread's last failed call; never NULL. */
  const char* (*last_error)(void* ctx);
  /* 1.9, optional (check MP_HAS_FIELD and NULL): data[0..n) in this rank's device memory becomes
   * the sum over the ranks, queued on `stream` (this rank's mp_stream of its own device service);
   * returns once queued, and the sum is there when the stream reaches it. Every rank gets the
   * same bits; the order of the additions is the library's (with two ranks, a + b = b + a).
   * NULL: the host has no device collective, and the architecture stages through host memory and
   * all_reduce_sum_f32. Fails with MP_ERR_INTERNAL once any rank aborted. */
  mp_status (*all_reduce_sum_f32_device)(void* ctx, float* data, uint64_t n, mp_stream stream);
} mp_collective;

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
