/* moepage plugin ABI v1: the architecture vtable. An architecture reads a checkpoint's dense
 * weights, describes its routed experts (the catalog), and runs prefill and decode. It reaches
 * routed expert bytes only through the pager it is bound to. */
#ifndef MOEPAGE_ARCH_H
#define MOEPAGE_ARCH_H
#include "moepage/host_api.h"
#include "moepage/options.h"
#include "moepage/pager.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mp_model_info {
  uint32_t struct_size;
  uint32_t vocab_size;
  uint32_t n_layers;
  uint32_t d_model;
  uint32_t n_experts; /* routed experts per layer */
  uint32_t top_k;
  int32_t bos_token; /* -1: none */
  int32_t eos_token; /* -1: none */
  uint64_t max_positions;
  uint64_t dense_bytes;  /* weights placed at load (everything but routed experts) */
  uint64_t expert_bytes; /* all routed experts in the checkpoint */
} mp_model_info;

typedef struct mp_arch_create_args {
  uint32_t struct_size;
  const mp_host_api* host;
  const mp_options* options;
  const char* checkpoint_dir;
} mp_arch_create_args;

/* What `moepage synth` asks an architecture to write. */
typedef struct mp_synth_request {
  uint32_t struct_size;
  const char* preset; /* architecture-defined, e.g. "tiny", "small", "flash" */
  const char* out_dir;
  uint64_t seed;
  int32_t layers;           /* <= 0: the preset's */
  int32_t experts;          /* <= 0: the preset's */
  const char* expert_dtype; /* NULL or "": the preset's */
  uint32_t show_progress;   /* 1: progress lines on stderr */
} mp_synth_request;

typedef enum mp_forward_flags {
  MP_FORWARD_LAST_LOGITS = 0, /* logits for the last token only: [vocab] */
  MP_FORWARD_ALL_LOGITS = 1   /* logits for every token: [n, vocab] */
} mp_forward_flags;

/* Work counters of an architecture instance since its last bind_pager (ABI 1.1). */
typedef struct mp_arch_stats {
  uint32_t struct_size;
  uint32_t routed_timed;   /* 1: routed_ns was measured; 0: this build cannot time it (e.g. async GPU) */
  uint64_t tokens;         /* tokens run through forward() */
  uint64_t routed_experts; /* (token, routed expert) pairs computed */
  uint64_t routed_ns;      /* wall time computing routed experts, their I/O waits excluded */
  /* 1.9: one rank of an expert-parallel group: its all-reduces of the MoE blocks' outputs, and
   * their time (on the host: wall time, the wait for the other ranks included; on a GPU summing on
   * the device: the device time between the sum's start and end on the stream, in the calls that
   * waited for their results). Zero for a single rank. */
  uint64_t collective_calls;
  uint64_t collective_ns;
  /* 1.11: decode layer steps whose routed experts the architecture looked up on the device in the
   * pager's residency (no round trip to the host unless one missed), and of those the ones where
   * one missed and the device waited for the host. Zero where it never does. */
  uint64_t slot_lookups;
  uint64_t slot_stalls;
} mp_arch_stats;

/* What join_ranks (ABI 1.7) hands an architecture: it runs as rank collective->rank of
 * collective->size ranks that each own a share of every layer's routed experts. Every rank runs
 * the dense layers on the same tokens; in each MoE block it computes only the chosen experts it
 * owns (rank 0 also any shared expert) and sums the ranks' parts with all_reduce_sum_f32. Its
 * pager's catalog (host side) covers only the owned experts: the architecture must never acquire
 * an expert another rank owns. Everything here stays valid until the instance is destroyed. */
typedef struct mp_expert_parallel {
  uint32_t struct_size;
  uint32_t n_layers;     /* must equal the catalog's */
  uint32_t n_experts;    /* routed experts per layer, must equal the catalog's */
  const uint32_t* owner; /* [n_layers * n_experts]: the rank owning (layer, expert), each < size */
  const mp_collective* collective;
} mp_expert_parallel;

typedef struct mp_arch_vtable {
  uint32_t struct_size;
  /* 0: cannot run this checkpoint (skip quietly); higher is a better match. */
  int32_t (*probe)(const mp_host_api* host, const char* checkpoint_dir);
  mp_status (*create)(const mp_arch_create_args* args, void** self, char* err, uint32_t err_cap);
  void (*destroy)(void* self);
  /* The message of this thread's last failed call on this instance (see transport.h). */
  const char* (*last_error)(void* self);
  /* An output struct (host_api.h): the caller sets struct_size, the architecture fills what fits. */
  mp_status (*describe)(void* self, mp_model_info* out);
  /* The catalog stays valid until destroy. */
  mp_status (*expert_catalog)(void* self, const mp_expert_catalog** out);
  /* Routed experts come from this pager from now on; must precede forward(). */
  mp_status (*bind_pager)(void* self, const mp_pager_ref* pager);
  /* Forgets every token: positions restart at 0. */
  mp_status (*reset)(void* self);
  /* Appends n tokens to the sequence (a prefill chunk or one decode token) and writes logits
   * (float32) as `flags` asks. */
  mp_status (*forward)(void* self, const int32_t* tokens, uint32_t n, float* logits, uint32_t flags);
  /* Optional: a human-readable summary (geometry, layer schedule) into buf; NUL-terminated. */
  mp_status (*summary)(void* self, char* buf, uint32_t cap);
  /* Optional: writes a synthetic checkpoint. Static: needs no instance. */
  mp_status (*synthesize)(const mp_host_api* host, const mp_synth_request* request, char* err, uint32_t err_cap);
  /* Optional (ABI 1.1): counters since bind_pager; an output struct like describe's. */
  mp_status (*stats)(void* self, mp_arch_stats* out);
  /* Optional (ABI 1.2): forward() of n tokens, then, instead of the logits, the greedy next token:
   * the first index of the largest logit of the last token. A NaN logit is an error. Lets a GPU
   * build pick on the device and skip copying the vocabulary's logits to the host every step. */
  mp_status (*forward_greedy)(void* self, const int32_t* tokens, uint32_t n, int32_t* next_token);
  /* Optional (ABI 1.7): makes this instance one rank of an expert-parallel group (see
   * mp_expert_parallel); called once, after create and before bind_pager. An architecture without
   * it runs only as a single rank (the host refuses ranks > 1 naming it). MP_ERR_UNSUPPORTED when
   * this instance cannot (e.g. on a device without a collective). */
  mp_status (*join_ranks)(void* self, const mp_expert_parallel* group);
} mp_arch_vtable;

#ifdef __cplusplus
}
#endif
#endif
