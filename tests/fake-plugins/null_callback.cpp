// A transport whose vtable lacks the required wait() callback: must be refused by name.
#include "fake_transport.hpp"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  return fake::query_one_transport(manifest, "fake-null-callback", "has no wait()", [](mp_component_descriptor& d) {
    d.transport = fake::edited_vtable([](mp_transport_vtable& v) { v.wait = nullptr; });
  });
}
