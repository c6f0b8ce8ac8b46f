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
  MP_MEM_HOST = 0,  /* ordinary or pinned host memory: written directly */
  MP_MEM_DEVICE = 1 /* device memory: staged in pinned memory and copied on the transport's stream */
} mp_memory_kind;

typedef enum mp_read_priority {
  MP_READ_DEMAND = 0,  /* the compute step is waiting for it */
  MP_READ_PREFETCH = 1 /* speculative; served after every queued demand read */
} mp_read_priority;

/* One read. Requests travel in arrays whose stride is the first element's struct_size
 * (host_api.h); every element of one array has the same struct_size. */
typedef struct mp_read_request {
  uint32_t struct_size;
  uint32_t file;       /* a handle from open() */
  uint64_t offset;     /* byte offset in the file */
  uint64_t length;     /* bytes to read */
  void* dst;           /* destination buffer; may be NULL when length is 0 */
  uint64_t dst_offset; /* bytes into dst */
  int32_t dst_kind;    /* mp_memory_kind */
  int32_t priority;    /* mp_read_priority */
  uint64_t tag;        /* caller's cookie: echoed in errors and in mp_ticket_result.failed_tag */
} mp_read_request;

typedef struct mp_transport_stats {
  uint32_t struct_size;
  uint64_t requests;   /* read requests completed */
  uint64_t bytes_read; /* bytes read from files */
  uint64_t read_ns;    /* summed over reader threads */
  uint64_t copy_ns;    /* host->device copies, summed */
  uint64_t wait_ns;    /* time callers spent blocked in wait() */
  uint64_t errors;     /* requests that failed */
} mp_transport_stats;

typedef uint64_t mp_ticket; /* 0 is never a valid ticket */

#define MP_NO_REQUEST UINT32_MAX /* mp_ticket_result.failed_request when no request failed */

/* Which request of a ticket failed, as data (ABI 1.4): an output struct (host_api.h), filled by
 * wait_result() and poll_result() whenever they report the ticket, success included. */
typedef struct mp_ticket_result {
  uint32_t struct_size;
  uint32_t failed_request; /* index in the submitted array of the request whose error the call
                              returned; MP_NO_REQUEST when none failed or none can be named */
  uint64_t failed_tag;     /* that request's tag; 0 with MP_NO_REQUEST */
  uint32_t failed_count;   /* requests of the ticket that failed */
  uint32_t reserved;
} mp_ticket_result;

/* The rules every transport keeps (`moepage conform` checks each one it can):
 *  - Files: open() returns any handle value, 0 included; a handle this instance did not return
 *    (before any open(), 0 too) is MP_ERR_INVALID_ARG at submit.
 *  - submit checks the whole batch before queueing any of it (bad handle, NULL dst with a
 *    non-zero length, offset overflow, unknown kind or priority: MP_ERR_INVALID_ARG), so a
 *    refused batch leaves nothing running. An empty batch is a valid ticket that completes at once.
 *  - A zero-length request completes with MP_OK whatever its offset, reads nothing and never
 *    touches dst (which may be NULL).
 *  - A request whose range ends past the end of its file fails its ticket with MP_ERR_IO; the
 *    message names the file, the offset and the length. Bytes of dst inside the range may have
 *    been written, bytes outside it never are. The instance keeps working afterwards.
 *  - A ticket is reported once: wait(), or a poll() that does not return MP_PENDING, retires it;
 *    asking again (or about ticket 0, or a ticket never issued) is MP_ERR_INVALID_ARG. When two
 *    threads wait for (or poll) one ticket at once, exactly one of them gets its result; the other
 *    gets MP_ERR_INVALID_ARG and never blocks forever.
 *  - Device destinations (MP_MEM_DEVICE): the transport reads into host memory of its own and
 *    copies with the host's device service. The source of every copy_to_device_async must be
 *    pinned memory from the host's alloc_pinned, or memory registered with register_host (1.6)
 *    (a pageable source silently turns the copy synchronous on a GPU; the conformance host
 *    refuses to count it). wait(), and a poll() that
 *    reports completion, return only after every copy of the ticket has completed (synchronise
 *    the copy stream or an event recorded after the copies), whether or not ticket_event exists.
 *    A transport that cannot do device copies refuses them at submit with MP_ERR_UNSUPPORTED;
 *    one that declares MP_CAP_GPU must accept them.
 *  - Status codes travel unchanged: the status a call returns is the one its failure has (an
 *    MP_ERR_INTERNAL raised inside submit arrives as MP_ERR_INTERNAL, not MP_ERR_IO); the same
 *    holds for pagers that pass a transport's failure on.
 *  - last_error(self) is the message of the last failed call on this instance made by the calling
 *    thread, so concurrent failures on other threads never change or free it. It stays valid
 *    until the same thread's next call into the instance. */
typedef struct mp_transport_vtable {
  uint32_t struct_size;
  /* Creates an instance; on failure writes a one-line message into err (err_cap bytes). */
  mp_status (*create)(const mp_host_api* host, const mp_options* options, void** self, char* err, uint32_t err_cap);
  void (*destroy)(void* self);
  /* The message of this thread's last failed call on this instance; never NULL. */
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
  /* 1.4, required from plugins that declare minor 4 or later: wait() and poll() that also fill
   * `out` (may be NULL) with which request failed. A host uses them when they lie inside
   * struct_size and are non-NULL, and wait()/poll() otherwise. */
  mp_status (*wait_result)(void* self, mp_ticket ticket, mp_ticket_result* out);
  mp_status (*poll_result)(void* self, mp_ticket ticket, mp_ticket_result* out);
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
