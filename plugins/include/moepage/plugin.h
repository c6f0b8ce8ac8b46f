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

typedef enum mp_component_kind { MP_KIND_ARCH = 0, MP_KIND_PAGER = 1, MP_KIND_TRANSPORT = 2 } mp_component_kind;

/* Capability flags (append-only bits). What they promise for a transport:
 *  MP_CAP_CPU    works when the host's device is the CPU device (host->device->kind ==
 *                MP_DEVICE_CPU); MP_MEM_DEVICE destinations are then host memory from
 *                alloc_device and are still written through the device service.
 *  MP_CAP_GPU    accepts MP_MEM_DEVICE destinations on a GPU device: reads are staged in pinned
 *                memory and copied with copy_to_device_async (transport.h). Without it a
 *                transport may refuse device destinations with MP_ERR_UNSUPPORTED.
 *  MP_CAP_ASYNC  submit() returns before the reads are done (they run on the transport's own
 *                threads), so poll() may report MP_PENDING and the caller overlaps work with
 *                reads. Without it submit() finishes every read before it returns: a poll()
 *                right after submit() never reports MP_PENDING.
 * For pagers and architectures CPU and GPU name the devices they run on. */
enum {
  MP_CAP_CPU = 1u << 0,       /* runs on the CPU device */
  MP_CAP_GPU = 1u << 1,       /* runs on a GPU device */
  MP_CAP_ASYNC = 1u << 2,     /* completes work without blocking the submitter */
  MP_CAP_PREFETCH = 1u << 3,  /* pager: issues speculative reads */
  MP_CAP_SYNTHESIZE = 1u << 4 /* arch: can write synthetic checkpoints */
};

typedef struct mp_component_descriptor {
  uint32_t struct_size;
  int32_t kind;            /* mp_component_kind */
  const char* name;        /* unique per kind; profiles select by this; "auto" is reserved */
  const char* version;     /* the component's own version string */
  const char* description; /* one line for `moepage plugins` */
  uint32_t capabilities;   /* MP_CAP_* */
  /* Optional: how well the component suits this host, asked once at load. <= 0: unusable here
   * (skipped quietly). Otherwise it ranks the components of one kind when a profile leaves the
   * choice to the host (`plugin: auto`): the highest score is chosen, a tie at the top is an
   * error. A component without score() is never chosen automatically. Scores do not decide
   * between two libraries offering the same name: the plugin search order does. */
  int32_t (*score)(const mp_host_api* host);
  uint32_t n_options;
  const mp_option_def* options; /* stride = options[0].struct_size (host_api.h) */
  /* Exactly one, matching kind; the others NULL. */
  const mp_arch_vtable* arch;
  const mp_pager_vtable* pager;
  const mp_transport_vtable* transport;
} mp_component_descriptor;

typedef struct mp_plugin_manifest {
  uint32_t struct_size; /* set by the host: the size it allocated */
  uint32_t abi_major;   /* set by the plugin: MP_ABI_MAJOR it was built against */
  uint32_t abi_minor;   /* set by the plugin: the oldest host minor it runs on
                           (MP_PLUGIN_ABI_MINOR, by default the headers' MP_ABI_MINOR) */
  const char* plugin_name;
  const char* version;
  uint32_t n_components;
  /* Static storage in the plugin; stride = components[0].struct_size (host_api.h). */
  const mp_component_descriptor* components;
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
