/* moepage plugin ABI v1: the expert catalog and the pager vtable.
 * The architecture describes where every routed expert's bytes live (the catalog); the pager
 * decides which experts occupy its slots and asks a transport to fill them. */
#ifndef MOEPAGE_PAGER_H
#define MOEPAGE_PAGER_H
#include "moepage/host_api.h"
#include "moepage/options.h"
#include "moepage/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where one part of one expert lives in the checkpoint. */
typedef struct mp_expert_segment {
  uint32_t struct_size;
  uint32_t file;   /* index into mp_expert_catalog.files */
  uint64_t offset; /* absolute byte offset in that file */
  uint64_t length; /* bytes */
} mp_expert_segment;

/* Every routed expert of the model. An expert is n_parts segments (for DeepSeek-V4: w1, w1
 * scale, w3, w3 scale, w2, w2 scale); a slot holds them back to back at part_offset[p], which need
 * not rise with p (deepseek4 lays them in the order the checkpoint stores them, so that an expert
 * stored as one run of bytes is one run in its slot and a transport can copy it at once). */
typedef struct mp_expert_catalog {
  uint32_t struct_size;
  uint32_t n_layers;             /* decoder layers */
  uint32_t n_experts;            /* routed experts per layer */
  uint32_t n_parts;              /* segments per expert */
  uint32_t top_k;                /* experts each token uses per layer */
  uint64_t expert_bytes;         /* one slot's bytes: all parts, each aligned */
  const uint64_t* part_offset;   /* [n_parts] offset of each part inside a slot */
  const uint64_t* part_bytes;    /* [n_parts] */
  const char* const* part_names; /* [n_parts] e.g. "w1", "w1.scale" */
  uint32_t n_files;
  const char* const* files; /* [n_files] absolute paths */
  /* [n_layers * n_experts * n_parts], index (layer * n_experts + expert) * n_parts + part.
   * A layer without routed experts has has_experts[layer] == 0 and no meaningful segments. */
  const mp_expert_segment* segments; /* stride = segments[0].struct_size (host_api.h) */
  const uint8_t* has_experts;        /* [n_layers] */
  const uint8_t* hash_routed;        /* [n_layers] routing known from token ids (stage before the step) */
  uint32_t d_model;                  /* hidden width, for predictors */
} mp_expert_catalog;

typedef struct mp_pager_stats {
  uint32_t struct_size;
  uint64_t accesses;   /* expert uses requested by acquire() */
  uint64_t hits;       /* found resident (prefetched or cached) */
  uint64_t misses;     /* had to be read on demand */
  uint64_t bytes_read; /* by this pager, demand + prefetch */
  uint64_t read_ns;    /* host time inside transport reads (demand) */
  uint64_t wait_ns;    /* compute blocked waiting for expert bytes */
  uint64_t copy_ns;    /* host->device copies */
  uint64_t prefetch_issued;
  uint64_t prefetch_used;   /* prefetched experts later acquired before eviction */
  uint64_t prefetch_wasted; /* prefetched experts evicted unused */
  uint64_t table_uploads;   /* pointer tables that changed */
  uint32_t slots_per_layer; /* 0 when not paged */
  uint32_t resident;        /* 1: every expert is resident (paging off) */
  uint64_t pool_bytes;      /* device bytes held by slot pools */
  uint64_t load_bytes_read; /* expert bytes read during create() */
  uint64_t predictions;     /* predictor: experts predicted */
  uint64_t predictions_hit; /* predictor: predicted experts the router then chose */
} mp_pager_stats;

typedef struct mp_pager_layer_stats {
  uint32_t struct_size;
  uint64_t accesses;
  uint64_t hits;
  uint64_t misses;
} mp_pager_layer_stats;

/* What a trace event records (mp_trace_event.kind, ABI 1.3). */
enum { MP_TRACE_ACCESS = 0, MP_TRACE_PREDICTION = 1 };

/* One expert access, for traces; since ABI 1.3 also one expert a predictor proposed. */
typedef struct mp_trace_event {
  uint32_t struct_size;
  uint64_t token; /* decode step / token index given by begin_token */
  uint32_t layer;
  uint32_t expert;
  uint8_t hit;
  uint8_t prefetched;  /* the slot was filled by a prefetch */
  uint8_t reserved[6]; /* padding in 1.0-1.2, named so that 1.3's fields start past it */
  /* 1.3: MP_TRACE_ACCESS, or MP_TRACE_PREDICTION: the pager's predictor proposed `expert` for
   * `layer` (hit and prefetched are 0). A host reads these only when struct_size covers them;
   * older pagers send accesses only. */
  uint32_t kind;
  uint32_t rank; /* 1.3, predictions: position in the predictor's ranked list, 0 first */
} mp_trace_event;
typedef void (*mp_trace_fn)(void* ctx, const mp_trace_event* event);

/* What acquire() hands back: per requested expert, the base of its slot (parts follow at
 * catalog.part_offset), and an event the compute stream waits on (NULL: already resident). */
typedef struct mp_acquire_result {
  uint32_t struct_size;
  void** slots;           /* caller-provided [n] */
  mp_event ready;         /* NULL when nothing is in flight */
  uint32_t table_changed; /* 1 when any expert's slot differs from the last acquire of this layer */
  /* 1.5, acquire_start only (plain acquire leaves it alone): caller-provided [n] or NULL. The pager
   * writes pending[i] = 1 when experts[i] is a miss whose bytes are still being read (wait for it
   * with acquire_await), 0 when its slot is valid now. Inside struct_size and non-NULL, or
   * acquire_start refuses the call. */
  uint8_t* pending;
} mp_acquire_result;

/* A predictor whose scores are linear in the hidden state (1.10, mp_pager_vtable.linear_predictor):
 * scores = b (a h) + bias, h the d_model floats observe() would receive. An output struct. */
typedef struct mp_linear_predictor {
  uint32_t struct_size;
  uint32_t rank;      /* rows of a, columns of b */
  uint32_t d_model;   /* columns of a: observe()'s d_model */
  uint32_t n_experts; /* rows of b: the catalog's n_experts */
  const float* a;     /* [rank][d_model], row-major, host memory */
  const float* b;     /* [n_experts][rank], row-major, host memory */
  const float* bias;  /* [n_experts], host memory, or NULL for none */
} mp_linear_predictor;

typedef struct mp_pager_create_args {
  uint32_t struct_size;
  const mp_host_api* host;
  const mp_options* options;
  const mp_expert_catalog* catalog;
  mp_transport_ref transport;
  /* Bytes of device memory already placed by the architecture (for budget accounting). */
  uint64_t dense_bytes;
} mp_pager_create_args;

typedef struct mp_pager_vtable {
  uint32_t struct_size;
  mp_status (*create)(const mp_pager_create_args* args, void** self, char* err, uint32_t err_cap);
  void (*destroy)(void* self);
  /* The message of this thread's last failed call on this instance (see transport.h). */
  const char* (*last_error)(void* self);
  /* Marks the start of a token (or prefill chunk) for statistics and traces. */
  mp_status (*begin_token)(void* self, uint64_t token);
  /* Makes experts[0..n) of `layer` resident and returns their slots. Distinct experts only;
   * n may exceed top_k during prefill (a band of tokens). Errors name layer, expert, file, offset,
   * and keep the status of the transport call that failed. `out` is an output struct
   * (host_api.h): slots is read from it, ready and table_changed written inside its struct_size. */
  mp_status (*acquire)(void* self, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out);
  /* Optional. Hidden state after `layer` (d_model floats, host memory on the CPU device, device
   * memory otherwise) for predictors. */
  mp_status (*observe)(void* self, uint32_t layer, const float* hidden, uint32_t d_model, mp_stream stream);
  /* Optional. Experts of `layer` likely to be needed soon, most likely first; the pager may
   * prefetch them but must never evict one the current token already acquired. */
  mp_status (*hint)(void* self, uint32_t layer, const int32_t* experts, uint32_t n);
  /* Output structs (host_api.h): the caller sets struct_size, the pager fills what fits. */
  mp_status (*stats)(void* self, mp_pager_stats* out);
  mp_status (*layer_stats)(void* self, uint32_t layer, mp_pager_layer_stats* out);
  /* Optional. Receives one event per expert access; NULL fn turns tracing off. */
  mp_status (*set_trace)(void* self, mp_trace_fn fn, void* ctx);

  /* 1.5, optional, all three or none: the split acquire, so that compute on the hits (and on
   * each miss as its bytes land) overlaps the reads of the other misses. A host uses them when
   * all three lie inside struct_size and are non-NULL, and plain acquire otherwise.
   *
   *  acquire_start(layer, experts, n, out): what acquire() does up to the reads: settles the
   *    layer's prefetches (in its bookkeeping: a hit on a prefetch whose bytes are still landing
   *    may be reported pending), plans (the same eviction decisions as acquire), submits the reads of
   *    the misses, and returns without waiting for them. Writes slots[i] for every expert,
   *    pending[i] (see mp_acquire_result), table_changed, and ready = NULL. Counts accesses, hits
   *    and misses as acquire does. Its errors (a bad request, a refused submit) leave nothing
   *    started: the slots it planned are emptied and nothing is to finish.
   *  acquire_await(layer, index, ready): for experts[index] of the layer's started acquire with
   *    pending[index] = 1: blocks the host until that expert's bytes are read and their copies
   *    queued, then writes into *ready an event the compute stream waits on before it reads the
   *    slot (NULL: the bytes are in the slot already, e.g. when the transport offers no
   *    ticket_event). It never reports a read's failure (acquire_finish does): what is computed
   *    from the slot is only trustworthy once acquire_finish returned MP_OK. Optional per expert:
   *    finish waits for what was not awaited.
   *  acquire_finish(layer): waits for every read of the layer's started acquire and commits the
   *    slots. On a failed or short read it empties every slot the acquire was filling (none of
   *    them becomes valid; the next access reads again) and fails naming layer, expert, part,
   *    file and offset; the caller must then discard whatever it computed from those slots (the
   *    deepseek4 forward fails the call). A layer with nothing started: MP_ERR_INVALID_ARG.
   *
   * Between start and finish of a layer the caller may await, hint (any layer: a prefetch never
   * evicts a slot being filled), acquire other layers, begin no token and start no other acquire
   * of that layer (MP_ERR_INVALID_ARG). destroy() with a started acquire waits for its reads and
   * drops them (the slots stay empty). */
  mp_status (*acquire_start)(void* self, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out);
  mp_status (*acquire_await)(void* self, uint32_t layer, uint32_t index, mp_event* ready);
  mp_status (*acquire_finish)(void* self, uint32_t layer);

  /* 1.8, optional: for a pager whose every expert of `layer` keeps one slot for the instance's
   * life (resident). Writes the slot of each of the layer's n experts (n = the catalog's
   * n_experts) into slots[0..n), counting no access and emitting no trace event. A host that gets
   * MP_OK may look the slots up on the device (routing there, with no round trip to the host per
   * layer); it still reports every access afterwards through acquire, which must return the same
   * slots. MP_ERR_UNSUPPORTED: the layer's slots may move, so the host acquires before each use. */
  mp_status (*fixed_slots)(void* self, uint32_t layer, void** slots, uint32_t n);

  /* 1.10, optional, both or none: a predictor the host may evaluate where the hidden state lives
   * (on a GPU: beside the forward pass, reading back n_experts scores instead of the state).
   *  linear_predictor(layer, out): when observe(layer) would score layer + 1's experts as
   *    b (a h) + bias, describes a, b and bias (out: an output struct). The arrays stay valid and
   *    unchanged for the instance's life. MP_ERR_UNSUPPORTED: observe(layer) scores nothing, or
   *    not linearly; the host then calls observe.
   *  observe_scores(layer, scores, n): the scores (host memory, n = n_experts) the host computed
   *    so from layer's hidden state, in place of observe(layer): the pager does with them what
   *    observe does with its own (prefetch, statistics, traces). Per layer and step a host calls
   *    observe or observe_scores, never both. */
  mp_status (*linear_predictor)(void* self, uint32_t layer, mp_linear_predictor* out);
  mp_status (*observe_scores)(void* self, uint32_t layer, const float* scores, uint32_t n);

  /* 1.11, optional: which experts of `layer` a reader may use now without acquiring, so that a host
   * can look them up on the device (the router finds its experts' slots there and only misses
   * travel to the host). Writes generation: a count that changes whenever the answer would. With
   * slots non-NULL (n = the catalog's n_experts) also writes slots[e]: the slot of expert e when
   * its bytes are in it, committed, with no read into that slot in flight; NULL otherwise (absent,
   * or still landing). Counts no access and emits no trace event.
   * What a pager promises by offering it: a layer's answer changes only inside calls that name that
   * layer (acquire, acquire_start .. acquire_finish, hint), never by itself or through another
   * layer's calls; a slot it reported keeps that expert's bytes until such a call returns; and
   * acquire of an expert it reported returns that same slot. A host that reads the slots on the
   * device still reports every access through acquire, in order, as the pager would have seen
   * them. MP_ERR_UNSUPPORTED: this layer's experts must be acquired before each use. */
  mp_status (*residency)(void* self, uint32_t layer, void** slots, uint32_t n, uint64_t* generation);
} mp_pager_vtable;

/* Whether a pager vtable offers the split acquire (1.5): all three calls inside struct_size. */
static inline int mp_pager_splits_acquire(const mp_pager_vtable* v) {
  return MP_HAS_FIELD(v, mp_pager_vtable, acquire_finish) && v->acquire_start != NULL && v->acquire_await != NULL &&
         v->acquire_finish != NULL;
}

/* Whether a pager vtable offers fixed_slots (1.8). */
static inline int mp_pager_offers_fixed_slots(const mp_pager_vtable* v) {
  return MP_HAS_FIELD(v, mp_pager_vtable, fixed_slots) && v->fixed_slots != NULL;
}

/* Whether a pager vtable offers the linear predictor (1.10): both calls inside struct_size. */
static inline int mp_pager_offers_linear_predictor(const mp_pager_vtable* v) {
  return MP_HAS_FIELD(v, mp_pager_vtable, observe_scores) && v->linear_predictor != NULL && v->observe_scores != NULL;
}

/* Whether a pager vtable offers residency (1.11). */
static inline int mp_pager_offers_residency(const mp_pager_vtable* v) {
  return MP_HAS_FIELD(v, mp_pager_vtable, residency) && v->residency != NULL;
}

typedef struct mp_pager_ref {
  uint32_t struct_size;
  const mp_pager_vtable* vtable;
  void* self;
} mp_pager_ref;

#ifdef __cplusplus
}
#endif
#endif
