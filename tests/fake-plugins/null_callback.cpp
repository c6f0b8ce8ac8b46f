// A transport whose vtable lacks the required wait() callback: must be refused by name.
#include <array>
#include <cstddef>

#include "fake_transport.hpp"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  static const mp_transport_vtable broken = [] {
    mp_transport_vtable v = *mp::transport_vtable<fake::PatternTransport>();
    v.wait = nullptr;
    return v;
  }();
  static const std::array<mp_component_descriptor, 1> components = [] {
    mp_component_descriptor d = mp::make_transport_descriptor<fake::PatternTransport>("fake-null-callback", "1.0.0",
                                                                                      "has no wait()", MP_CAP_CPU);
    d.transport = &broken;
    return std::to_array({d});
  }();
  return mp::fill_manifest(manifest, "fake-null-callback", "1.0.0", components);
}
