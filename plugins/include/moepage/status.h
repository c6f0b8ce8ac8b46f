/* moepage plugin ABI v1: status codes. Every call across the boundary returns one of these.
 * Codes are append-only; a host that meets an unknown code treats it as MP_ERR_INTERNAL.
 * A status travels unchanged: a component whose call failed because a call it made failed
 * returns that call's status (a transport's MP_ERR_DEVICE reaches the host as MP_ERR_DEVICE
 * through the pager and the architecture), and adds its own context to the message only. */
#ifndef MOEPAGE_STATUS_H
#define MOEPAGE_STATUS_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t mp_status;

enum {
  MP_OK = 0,
  MP_ERR_INVALID_ARG = 1,   /* a caller passed something the callee cannot accept */
  MP_ERR_UNSUPPORTED = 2,   /* the component cannot do this here (missing capability, wrong device) */
  MP_ERR_IO = 3,            /* a read failed, was short, or a file is malformed */
  MP_ERR_OOM = 4,           /* host or device memory could not be had */
  MP_ERR_DEVICE = 5,        /* the device runtime reported an error */
  MP_ERR_NOT_AVAILABLE = 6, /* the component exists but its behaviour is not built yet */
  MP_ERR_INTERNAL = 7,      /* a bug or an exception caught at the boundary */
  MP_PENDING = 8            /* poll(): the work has not finished; not an error */
};

/* A short, static name for a status ("io", "oom", ...); never NULL. */
static inline const char* mp_status_name(mp_status s) {
  switch (s) {
    case MP_OK: return "ok";
    case MP_ERR_INVALID_ARG: return "invalid-arg";
    case MP_ERR_UNSUPPORTED: return "unsupported";
    case MP_ERR_IO: return "io";
    case MP_ERR_OOM: return "oom";
    case MP_ERR_DEVICE: return "device";
    case MP_ERR_NOT_AVAILABLE: return "not-available";
    case MP_ERR_INTERNAL: return "internal";
    case MP_PENDING: return "pending";
    default: return "unknown";
  }
}

#ifdef __cplusplus
}
#endif
#endif
