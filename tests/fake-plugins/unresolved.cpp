// Calls a function no library defines. Loaded lazily this would pass and crash on first use;
// the host loads with RTLD_NOW, so it is refused at load time.
#include "moepage/moepage.h"

extern "C" int moepage_fake_symbol_nobody_defines(void);

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest*) {
  return moepage_fake_symbol_nobody_defines() == 0 ? MP_OK : MP_ERR_INTERNAL;
}
