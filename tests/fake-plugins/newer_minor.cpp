// Declares ABI minor MP_ABI_MINOR + 1: it may use fields this host does not have, so it must
// be refused.
#include "fake_transport.hpp"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  return fake::query_one_transport(manifest, "fake-newer-minor", "declares a future ABI minor", fake::Unchanged{},
                                   [](mp_plugin_manifest& m) { m.abi_minor = MP_ABI_MINOR + 1; });
}
