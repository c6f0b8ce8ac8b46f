// A transport vtable whose struct_size claims fewer fields than ABI v1 requires.
#include <array>
#include <cstddef>

#include "fake_transport.hpp"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  static const mp_transport_vtable truncated = [] {
    mp_transport_vtable v = *mp::transport_vtable<fake::PatternTransport>();
    v.struct_size = offsetof(mp_transport_vtable, wait);  // stops before wait
    return v;
  }();
  static const std::array<mp_component_descriptor, 1> components = [] {
    mp_component_descriptor d = mp::make_transport_descriptor<fake::PatternTransport>("fake-small-struct", "1.0.0",
                                                                                      "truncated vtable", MP_CAP_CPU);
    d.transport = &truncated;
    return std::to_array({d});
  }();
  return mp::fill_manifest(manifest, "fake-small-struct", "1.0.0", components);
}
