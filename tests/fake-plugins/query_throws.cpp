// The entry point lets a C++ exception escape (a bug): the host must refuse, not crash.
#include <stdexcept>

#include "moepage/moepage.h"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest*) {
  throw std::runtime_error("query blew up");
}
