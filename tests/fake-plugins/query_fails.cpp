// The entry point reports an error: the library is refused.
#include "moepage/moepage.h"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest*) {
  return MP_ERR_UNSUPPORTED;
}
