/* moepage plugin ABI v1: option tables.
 * Each component declares its options; the host validates a profile's keys and values against
 * the table (unknown keys and wrong types are errors that name the key and the plugin), fills in
 * defaults, and hands the component normalised text values. */
#ifndef MOEPAGE_OPTIONS_H
#define MOEPAGE_OPTIONS_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mp_option_type {
  MP_OPT_BOOL = 0,  /* normalised to "true" / "false" */
  MP_OPT_INT = 1,   /* decimal, may be negative */
  MP_OPT_FLOAT = 2, /* decimal or exponent notation */
  MP_OPT_STRING = 3,
  MP_OPT_SIZE = 4,         /* "512MiB", "8GiB", "1.5GB", plain bytes; normalised to a byte count */
  MP_OPT_SIZE_OR_AUTO = 5, /* a size, or the word "auto" (kept as "auto") */
  MP_OPT_PATH = 6,         /* relative paths resolve against the profile that set them */
  MP_OPT_ENUM = 7          /* one of `choices`, separated by '|' */
} mp_option_type;

typedef struct mp_option_def {
  uint32_t struct_size;
  int32_t type; /* mp_option_type */
  const char* name;
  const char* default_value; /* NULL: the option is required */
  const char* help;
  const char* choices; /* MP_OPT_ENUM only: "a|b|c" */
} mp_option_def;

typedef struct mp_option_value {
  uint32_t struct_size;
  const char* name;
  const char* value; /* normalised text, see mp_option_type */
} mp_option_value;

/* Every option of the table, in table order, with defaults filled in. */
typedef struct mp_options {
  uint32_t struct_size;
  uint32_t count;
  const mp_option_value* values; /* stride = values[0].struct_size (host_api.h) */
} mp_options;

#ifdef __cplusplus
}
#endif
#endif
