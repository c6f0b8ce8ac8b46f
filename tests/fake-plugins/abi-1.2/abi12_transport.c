/* A transport written in C against the frozen ABI 1.2 structs (abi12.h), the way a third party
 * built one before 1.4: no SDK, no C++ adapter. It reads synchronously inside submit() with
 * pread(2), under one mutex, and keeps each ticket's outcome until wait() or poll() reports it.
 * Device destinations are read into pinned memory from the host and copied on a stream of its
 * own, which it synchronises before submit() returns. The tests load it into the current host
 * and run `moepage conform` on it: plugins built against older minors must keep working. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi12.h"

typedef struct {
  int fd;
  char* path;
} file12;

typedef struct {
  mp12_ticket id;
  mp12_status status;
  char message[512];
} outcome12;

typedef struct {
  const mp12_host_api* host;
  pthread_mutex_t mutex;
  file12* files;
  uint32_t n_files;
  outcome12* outcomes; /* reported tickets are removed */
  size_t n_outcomes;
  mp12_ticket next_ticket;
  void* bounce; /* pinned, for device destinations */
  uint64_t bounce_bytes;
  mp12_stream stream;
  mp12_transport_stats stats;
} transport12;

/* The calling thread's last failure, and the instance it was on. */
static _Thread_local char t_message[512];
static _Thread_local const void* t_owner;

static mp12_status fail(transport12* t, mp12_status status, const char* message) {
  snprintf(t_message, sizeof t_message, "%s", message);
  t_owner = t;
  return status;
}

static mp12_status create12(const mp12_host_api* host, const mp12_options* options, void** self, char* err,
                            uint32_t err_cap) {
  (void)options;
  transport12* t = calloc(1, sizeof *t);
  if (t == NULL) {
    if (err != NULL && err_cap > 0) snprintf(err, err_cap, "abi12: out of memory");
    return MP12_ERR_OOM;
  }
  t->host = host;
  t->next_ticket = 1;
  t->stats.struct_size = sizeof t->stats;
  pthread_mutex_init(&t->mutex, NULL);
  *self = t;
  return MP12_OK;
}

static void destroy12(void* self) {
  transport12* t = self;
  const mp12_device_service* dev = t->host != NULL ? t->host->device : NULL;
  if (t->bounce != NULL) dev->free_pinned(dev->ctx, t->bounce);
  if (t->stream != NULL) dev->stream_destroy(dev->ctx, t->stream);
  for (uint32_t i = 0; i < t->n_files; ++i) {
    close(t->files[i].fd);
    free(t->files[i].path);
  }
  free(t->files);
  free(t->outcomes);
  pthread_mutex_destroy(&t->mutex);
  free(t);
}

static const char* last_error12(void* self) { return t_owner == self ? t_message : ""; }

static mp12_status open_locked(transport12* t, const char* path, uint32_t* file) {
  char message[512];
  for (uint32_t i = 0; i < t->n_files; ++i) {
    if (strcmp(t->files[i].path, path) == 0) {
      *file = i;
      return MP12_OK;
    }
  }
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    snprintf(message, sizeof message, "abi12: cannot open %s: %s", path, fd < 0 ? strerror(errno) : "not a file");
    if (fd >= 0) close(fd);
    return fail(t, MP12_ERR_IO, message);
  }
  file12* grown = realloc(t->files, (t->n_files + 1) * sizeof *grown);
  char* copy = strdup(path);
  if (grown == NULL || copy == NULL) {
    if (grown != NULL) t->files = grown;
    free(copy);
    close(fd);
    return fail(t, MP12_ERR_OOM, "abi12: out of memory");
  }
  t->files = grown;
  t->files[t->n_files].fd = fd;
  t->files[t->n_files].path = copy;
  *file = t->n_files++;
  return MP12_OK;
}

static mp12_status open12(void* self, const char* path, uint32_t* file) {
  transport12* t = self;
  if (path == NULL || file == NULL) return fail(t, MP12_ERR_INVALID_ARG, "abi12: open: path or file is NULL");
  pthread_mutex_lock(&t->mutex);
  const mp12_status s = open_locked(t, path, file);
  pthread_mutex_unlock(&t->mutex);
  return s;
}

/* Reads length bytes at offset into dst; on failure writes the message. */
static mp12_status read_range(const file12* f, uint64_t offset, uint64_t length, unsigned char* dst, char* message,
                              size_t cap) {
  uint64_t done = 0;
  while (done < length) {
    const ssize_t got = pread(f->fd, dst + done, length - done, (off_t)(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      snprintf(message, cap, "abi12: %s: %s at offset %llu (wanted %llu bytes, got %llu)", f->path,
               got < 0 ? strerror(errno) : "unexpected end of file", (unsigned long long)offset,
               (unsigned long long)length, (unsigned long long)done);
      return MP12_ERR_IO;
    }
    done += (uint64_t)got;
  }
  return MP12_OK;
}

/* Device destinations: through pinned memory of ours and the host's copy, finished before return. */
static mp12_status read_to_device(transport12* t, const file12* f, const mp12_read_request* r, char* message,
                                  size_t cap) {
  const mp12_device_service* dev = t->host->device;
  if (t->bounce_bytes < r->length) {
    if (t->bounce != NULL) dev->free_pinned(dev->ctx, t->bounce);
    t->bounce = NULL;
    t->bounce_bytes = 0;
    if (dev->alloc_pinned(dev->ctx, r->length, &t->bounce) != MP12_OK || t->bounce == NULL) {
      snprintf(message, cap, "abi12: cannot allocate %llu bytes of pinned memory", (unsigned long long)r->length);
      return MP12_ERR_OOM;
    }
    t->bounce_bytes = r->length;
  }
  if (t->stream == NULL && dev->stream_create(dev->ctx, &t->stream) != MP12_OK) {
    snprintf(message, cap, "abi12: cannot create a copy stream");
    return MP12_ERR_DEVICE;
  }
  mp12_status s = read_range(f, r->offset, r->length, t->bounce, message, cap);
  if (s != MP12_OK) return s;
  s = dev->copy_to_device_async(dev->ctx, (unsigned char*)r->dst + r->dst_offset, t->bounce, r->length, t->stream);
  if (s == MP12_OK) s = dev->stream_synchronize(dev->ctx, t->stream);
  if (s != MP12_OK) snprintf(message, cap, "abi12: %s: the device copy failed", f->path);
  return s == MP12_OK ? MP12_OK : MP12_ERR_DEVICE;
}

static mp12_status check_request(const transport12* t, const mp12_read_request* r, uint32_t i, char* message,
                                 size_t cap) {
  if (r->struct_size < sizeof *r)
    snprintf(message, cap, "abi12: request %u: struct_size %u is too small", i, r->struct_size);
  else if (r->file >= t->n_files) snprintf(message, cap, "abi12: request %u: unknown file handle %u", i, r->file);
  else if (r->length > 0 && r->dst == NULL) snprintf(message, cap, "abi12: request %u: dst is NULL", i);
  else if (r->offset + r->length < r->offset) snprintf(message, cap, "abi12: request %u: offset + length overflows", i);
  else if (r->dst_kind != MP12_MEM_HOST && r->dst_kind != MP12_MEM_DEVICE)
    snprintf(message, cap, "abi12: request %u: unknown dst_kind %d", i, r->dst_kind);
  else if (r->dst_kind == MP12_MEM_DEVICE && (t->host == NULL || t->host->device == NULL))
    snprintf(message, cap, "abi12: request %u: no device service", i);
  else return MP12_OK;
  return MP12_ERR_INVALID_ARG;
}

static mp12_status submit_locked(transport12* t, const mp12_read_request* requests, uint32_t n, mp12_ticket* ticket) {
  char message[512];
  for (uint32_t i = 0; i < n; ++i) /* the whole batch is checked before anything is read */
    if (check_request(t, &requests[i], i, message, sizeof message) != MP12_OK)
      return fail(t, MP12_ERR_INVALID_ARG, message);
  outcome12* grown = realloc(t->outcomes, (t->n_outcomes + 1) * sizeof *grown);
  if (grown == NULL) return fail(t, MP12_ERR_OOM, "abi12: out of memory");
  t->outcomes = grown;
  outcome12* o = &t->outcomes[t->n_outcomes++];
  o->id = t->next_ticket++;
  o->status = MP12_OK;
  o->message[0] = '\0';
  for (uint32_t i = 0; i < n; ++i) {
    const mp12_read_request* r = &requests[i];
    if (r->length == 0) continue;
    const file12* f = &t->files[r->file];
    const mp12_status s =
        r->dst_kind == MP12_MEM_DEVICE
            ? read_to_device(t, f, r, message, sizeof message)
            : read_range(f, r->offset, r->length, (unsigned char*)r->dst + r->dst_offset, message, sizeof message);
    if (s == MP12_OK) {
      t->stats.bytes_read += r->length;
      continue;
    }
    ++t->stats.errors;
    if (o->status == MP12_OK) { /* the first error is the ticket's */
      o->status = s;
      snprintf(o->message, sizeof o->message, "%s", message);
    }
  }
  t->stats.requests += n;
  *ticket = o->id;
  return MP12_OK;
}

static mp12_status submit12(void* self, const mp12_read_request* requests, uint32_t n, mp12_ticket* ticket) {
  transport12* t = self;
  if (ticket == NULL || (requests == NULL && n > 0))
    return fail(t, MP12_ERR_INVALID_ARG, "abi12: submit: requests or ticket is NULL");
  pthread_mutex_lock(&t->mutex);
  const mp12_status s = submit_locked(t, requests, n, ticket);
  pthread_mutex_unlock(&t->mutex);
  return s;
}

/* Reads finish in submit(), so wait and poll both report (and retire) the ticket at once. */
static mp12_status report12(void* self, mp12_ticket ticket) {
  transport12* t = self;
  char message[512] = "";
  mp12_status status = MP12_ERR_INVALID_ARG;
  pthread_mutex_lock(&t->mutex);
  snprintf(message, sizeof message, "abi12: unknown ticket %llu (never issued, or already reported)",
           (unsigned long long)ticket);
  for (size_t i = 0; i < t->n_outcomes; ++i) {
    if (t->outcomes[i].id != ticket) continue;
    status = t->outcomes[i].status;
    snprintf(message, sizeof message, "%s", t->outcomes[i].message);
    t->outcomes[i] = t->outcomes[--t->n_outcomes];
    break;
  }
  pthread_mutex_unlock(&t->mutex);
  return status == MP12_OK ? MP12_OK : fail(t, status, message);
}

/* Writes what the caller's struct has room for, never its struct_size. */
static mp12_status stats12(void* self, mp12_transport_stats* out) {
  transport12* t = self;
  if (out == NULL) return fail(t, MP12_ERR_INVALID_ARG, "abi12: stats: out is NULL");
  pthread_mutex_lock(&t->mutex);
  const mp12_transport_stats s = t->stats;
  pthread_mutex_unlock(&t->mutex);
  const size_t size = out->struct_size < sizeof s ? out->struct_size : sizeof s;
  if (size > sizeof s.struct_size)
    memcpy((char*)out + sizeof s.struct_size, (const char*)&s + sizeof s.struct_size, size - sizeof s.struct_size);
  return MP12_OK;
}

static const mp12_transport_vtable kVtable = {
    sizeof(mp12_transport_vtable),
    create12,
    destroy12,
    last_error12,
    open12,
    submit12,
    report12,
    report12,
    stats12,
    NULL,
};

static const mp12_component_descriptor kComponents[] = {{
    sizeof(mp12_component_descriptor),
    MP12_KIND_TRANSPORT,
    "abi12-pread",
    "1.2.0",
    "a C transport built against the ABI 1.2 structs",
    MP12_CAP_CPU | MP12_CAP_GPU,
    NULL,
    0,
    NULL,
    NULL,
    NULL,
    &kVtable,
}};

MP12_EXPORT mp12_status moepage_plugin_query(const mp12_host_api* host, mp12_plugin_manifest* manifest) {
  (void)host;
  if (manifest == NULL || manifest->struct_size < sizeof *manifest) return MP12_ERR_INVALID_ARG;
  manifest->abi_major = MP12_ABI_MAJOR;
  manifest->abi_minor = MP12_ABI_MINOR;
  manifest->plugin_name = "abi12";
  manifest->version = "1.2.0";
  manifest->n_components = 1;
  manifest->components = kComponents;
  return MP12_OK;
}
