/* moepage plugin ABI v1: the transport vtable. A transport moves byte ranges of checkpoint files
 * into memory: host buffers, pinned buffers, or device memory (through the host's device
 * service). It never interprets the bytes. */
#ifndef MOEPAGE_TRANSPORT_H
#define MOEPAGE_TRANSPORT_H
#include "moepage/host_api.h"
#include "moepage/options.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mp_memory_kind {
  MP_MEM_HOST = 0,   /* ordinary or pinned host memory: written directly */
  MP_MEM_DEVICE = 1  /* device memory: staged in pinned memory and copied on the transport's stream */
} mp_memory_kind;

typedef enum mp_read_priority {
  MP_READ_DEMAND = 0,   /* the compute step is waiting for it */
  MP_READ_PREFETCH = 1  /* speculative; served after every queued demand read */
} mp_read_priority;

typedef struct mp_read_request {
  uint32_t struct_size;
  uint32_t file;        /* a handle from open() */
  uint64_t offset;      /* byte offset in the file */
  uint64_t length;      /* bytes to read */
  void* dst;            /* destination buffer */
  uint64_t dst_offset;  /* bytes into dst */
  int32_t dst_kind;     /* mp_memory_kind */
  int32_t priority;     /* mp_read_priority */
  uint64_t tag;         /* caller's cookie, echoed in errors (e.g. layer/expert) */
} mp_read_request;

typedef struct mp_transport_stats {
  uint32_t struct_size;
  uint64_t requests;     /* read requests completed */
  uint64_t bytes_read;   /* bytes read from files */
  uint64_t read_ns;      /* summed over reader threads */
  uint64_t copy_ns;      /* host->device copies, summed */
  uint64_t wait_ns;      /* time callers spent blocked in wait() */
  uint64_t errors;       /* requests that failed */
} mp_transport_stats;

typedef uint64_t mp_ticket; /* 0 is never a valid ticket */

typedef struct mp_transport_vtable {
  uint32_t struct_size;
  /* Creates an instance; on failure writes a one-line message into err (err_cap bytes). */
  mp_status (*create)(const mp_host_api* host, const mp_options* options, void** self, char* err, uint32_t err_cap);
  void (*destroy)(void* self);
  /* The message of the last failed call on this instance; never NULL. */
  const char* (*last_error)(void* self);
  mp_status (*open)(void* self, const char* path, uint32_t* file);
  /* Queues n reads as one ticket. Requests may complete in any order; the ticket completes when
   * all of them have. Buffers must stay valid until wait() or poll() reports completion. */
  mp_status (*submit)(void* self, const mp_read_request* requests, uint32_t n, mp_ticket* ticket);
  /* Blocks until the ticket completes; returns its first error (message in last_error). */
  mp_status (*wait)(void* self, mp_ticket ticket);
  /* MP_PENDING while running; otherwise the ticket's result, as wait() would return it. */
  mp_status (*poll)(void* self, mp_ticket ticket);
  mp_status (*stats)(void* self, mp_transport_stats* out);
  /* Optional: an event that completes when the ticket's device copies have (for the compute
   * stream to wait on without blocking the host). NULL: wait() is the only way. */
  mp_status (*ticket_event)(void* self, mp_ticket ticket, mp_event* out);
} mp_transport_vtable;

/* A live transport instance, as handed to a pager. */
typedef struct mp_transport_ref {
  uint32_t struct_size;
  const mp_transport_vtable* vtable;
  void* self;
} mp_transport_ref;

#ifdef __cplusplus
}
#endif
#endif
