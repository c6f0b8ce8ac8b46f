// Declares ABI major MP_ABI_MAJOR + 1: must be refused.
#include "fake_transport.hpp"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  return fake::query_one_transport(manifest, "fake-wrong-major", "declares a future ABI major", fake::Unchanged{},
                                   [](mp_plugin_manifest& m) { m.abi_major = MP_ABI_MAJOR + 1; });
}
