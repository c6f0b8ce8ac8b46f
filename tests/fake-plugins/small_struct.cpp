// A transport vtable whose struct_size claims fewer fields than ABI v1 requires.
#include <cstddef>

#include "fake_transport.hpp"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  return fake::query_one_transport(manifest, "fake-small-struct", "truncated vtable", [](mp_component_descriptor& d) {
    d.transport = fake::edited_vtable(
        [](mp_transport_vtable& v) { v.struct_size = offsetof(mp_transport_vtable, wait); });  // stops before wait
  });
}
