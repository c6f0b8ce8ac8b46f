// Exports a function with the wrong name (no export map): the loader must refuse it before
// loading, for a missing entry symbol.
#include "moepage/moepage.h"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query_v0(const mp_host_api*, mp_plugin_manifest*) { return MP_OK; }
