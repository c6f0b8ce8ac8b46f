/* moepage plugin ABI v1: the manifest and component descriptors.
 * A plugin library exports exactly one symbol, moepage_plugin_query, which fills a manifest
 * describing the components it provides. One library may provide several components. */
#ifndef MOEPAGE_PLUGIN_H
#define MOEPAGE_PLUGIN_H
#include "moepage/arch.h"
#include "moepage/host_api.h"
#include "moepage/options.h"
#include "moepage/pager.h"
#include "moepage/status.h"
#include "moepage/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mp_component_kind {
  MP_KIND_ARCH = 0,
  MP_KIND_PAGER = 1,
  MP_KIND_TRANSPORT = 2
} mp_component_kind;

/* Capability flags (append-only bits). */
enum {
  MP_CAP_CPU = 1u << 0,          /* runs on the CPU device */
  MP_CAP_GPU = 1u << 1,          /* runs on a GPU device */
  MP_CAP_ASYNC = 1u << 2,        /* completes work without blocking the submitter */
  MP_CAP_PREFETCH = 1u << 3,     /* pager: issues speculative reads */
  MP_CAP_SYNTHESIZE = 1u << 4    /* arch: can write synthetic checkpoints */
};

typedef struct mp_component_descriptor {
  uint32_t struct_size;
  int32_t kind;              /* mp_component_kind */
  const char* name;          /* unique per kind; profiles select by this */
  const char* version;       /* the component's own version string */
  const char* description;   /* one line for `moepage plugins` */
  uint32_t capabilities;     /* MP_CAP_* */
  /* Optional: 0 = unusable on this host (skipped quietly), otherwise a preference. */
  int32_t (*score)(const mp_host_api* host);
  uint32_t n_options;
  const mp_option_def* options;
  /* Exactly one, matching kind; the others NULL. */
  const mp_arch_vtable* arch;
  const mp_pager_vtable* pager;
  const mp_transport_vtable* transport;
} mp_component_descriptor;

typedef struct mp_plugin_manifest {
  uint32_t struct_size;      /* set by the host: the size it allocated */
  uint32_t abi_major;        /* set by the plugin: MP_ABI_MAJOR it was built against */
  uint32_t abi_minor;        /* set by the plugin: MP_ABI_MINOR it was built against */
  const char* plugin_name;
  const char* version;
  uint32_t n_components;
  const mp_component_descriptor* components; /* static storage in the plugin */
} mp_plugin_manifest;

#define MP_PLUGIN_ENTRY_SYMBOL "moepage_plugin_query"
typedef mp_status (*mp_plugin_query_fn)(const mp_host_api* host, mp_plugin_manifest* manifest);

#if defined(_WIN32)
#define MP_PLUGIN_EXPORT __declspec(dllexport)
#else
#define MP_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif
#endif
