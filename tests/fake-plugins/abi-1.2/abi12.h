/* The moepage plugin C ABI as it stood at 1.2, frozen for tests: the structs a transport plugin
 * sees, written out again here (prefixed mp12_) so that a plugin built from them cannot pick up
 * anything newer by accident. Layouts must match what 1.2 shipped (tests/abi pins the current
 * headers, which only ever append). Never edit this file to follow a newer ABI: that is the
 * point of it. */
#ifndef MOEPAGE_TEST_ABI12_H
#define MOEPAGE_TEST_ABI12_H
#include <stddef.h>
#include <stdint.h>

#define MP12_ABI_MAJOR 1
#define MP12_ABI_MINOR 2

typedef int32_t mp12_status;
enum {
  MP12_OK = 0,
  MP12_ERR_INVALID_ARG = 1,
  MP12_ERR_UNSUPPORTED = 2,
  MP12_ERR_IO = 3,
  MP12_ERR_OOM = 4,
  MP12_ERR_DEVICE = 5,
  MP12_ERR_NOT_AVAILABLE = 6,
  MP12_ERR_INTERNAL = 7,
  MP12_PENDING = 8
};

typedef struct mp12_stream_s* mp12_stream;
typedef struct mp12_event_s* mp12_event;

typedef struct mp12_device_service {
  uint32_t struct_size;
  int32_t kind;
  void* ctx;
  mp12_status (*alloc_device)(void* ctx, uint64_t bytes, void** out);
  mp12_status (*free_device)(void* ctx, void* ptr);
  mp12_status (*alloc_pinned)(void* ctx, uint64_t bytes, void** out);
  mp12_status (*free_pinned)(void* ctx, void* ptr);
  mp12_status (*stream_create)(void* ctx, mp12_stream* out);
  mp12_status (*stream_destroy)(void* ctx, mp12_stream stream);
  mp12_status (*stream_synchronize)(void* ctx, mp12_stream stream);
  mp12_status (*event_create)(void* ctx, mp12_event* out);
  mp12_status (*event_destroy)(void* ctx, mp12_event event);
  mp12_status (*event_record)(void* ctx, mp12_event event, mp12_stream stream);
  mp12_status (*stream_wait_event)(void* ctx, mp12_stream stream, mp12_event event);
  mp12_status (*event_query)(void* ctx, mp12_event event);
  mp12_status (*event_synchronize)(void* ctx, mp12_event event);
  mp12_status (*copy_to_device_async)(void* ctx, void* dst, const void* src, uint64_t bytes, mp12_stream stream);
  mp12_status (*copy_to_host)(void* ctx, void* dst, const void* src, uint64_t bytes);
  mp12_status (*memory_info)(void* ctx, uint64_t* free_bytes, uint64_t* total_bytes);
} mp12_device_service;

typedef struct mp12_host_api {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  void* ctx;
  void (*log)(void* ctx, int32_t level, const char* component, const char* message);
  uint64_t (*now_ns)(void* ctx);
  const mp12_device_service* device;
} mp12_host_api;

typedef struct mp12_option_def {
  uint32_t struct_size;
  int32_t type;
  const char* name;
  const char* default_value;
  const char* help;
  const char* choices;
} mp12_option_def;

typedef struct mp12_option_value {
  uint32_t struct_size;
  const char* name;
  const char* value;
} mp12_option_value;

typedef struct mp12_options {
  uint32_t struct_size;
  uint32_t count;
  const mp12_option_value* values;
} mp12_options;

enum { MP12_MEM_HOST = 0, MP12_MEM_DEVICE = 1 };
enum { MP12_READ_DEMAND = 0, MP12_READ_PREFETCH = 1 };

typedef struct mp12_read_request {
  uint32_t struct_size;
  uint32_t file;
  uint64_t offset;
  uint64_t length;
  void* dst;
  uint64_t dst_offset;
  int32_t dst_kind;
  int32_t priority;
  uint64_t tag;
} mp12_read_request;

typedef struct mp12_transport_stats {
  uint32_t struct_size;
  uint64_t requests;
  uint64_t bytes_read;
  uint64_t read_ns;
  uint64_t copy_ns;
  uint64_t wait_ns;
  uint64_t errors;
} mp12_transport_stats;

typedef uint64_t mp12_ticket;

typedef struct mp12_transport_vtable {
  uint32_t struct_size;
  mp12_status (*create)(const mp12_host_api* host, const mp12_options* options, void** self, char* err,
                        uint32_t err_cap);
  void (*destroy)(void* self);
  const char* (*last_error)(void* self);
  mp12_status (*open)(void* self, const char* path, uint32_t* file);
  mp12_status (*submit)(void* self, const mp12_read_request* requests, uint32_t n, mp12_ticket* ticket);
  mp12_status (*wait)(void* self, mp12_ticket ticket);
  mp12_status (*poll)(void* self, mp12_ticket ticket);
  mp12_status (*stats)(void* self, mp12_transport_stats* out);
  mp12_status (*ticket_event)(void* self, mp12_ticket ticket, mp12_event* out);
} mp12_transport_vtable;

enum { MP12_KIND_ARCH = 0, MP12_KIND_PAGER = 1, MP12_KIND_TRANSPORT = 2 };
enum { MP12_CAP_CPU = 1u << 0, MP12_CAP_GPU = 1u << 1, MP12_CAP_ASYNC = 1u << 2 };

typedef struct mp12_component_descriptor {
  uint32_t struct_size;
  int32_t kind;
  const char* name;
  const char* version;
  const char* description;
  uint32_t capabilities;
  int32_t (*score)(const mp12_host_api* host);
  uint32_t n_options;
  const mp12_option_def* options;
  const void* arch; /* the arch and pager vtables of 1.2; a transport leaves them NULL */
  const void* pager;
  const mp12_transport_vtable* transport;
} mp12_component_descriptor;

typedef struct mp12_plugin_manifest {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* plugin_name;
  const char* version;
  uint32_t n_components;
  const mp12_component_descriptor* components;
} mp12_plugin_manifest;

#define MP12_EXPORT __attribute__((visibility("default")))

#endif
