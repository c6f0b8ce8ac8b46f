// A transport without ABI 1.4's wait_result and poll_result. Built twice: declaring minor 4 it is
// refused (1.4 requires them), declaring minor 3 (MIN_ABI_MINOR 3) it loads.
#include <array>

#include "fake_transport.hpp"

#define FAKE_NAME (MP_PLUGIN_ABI_MINOR >= 4 ? "fake-no-results-14" : "fake-no-results-13")

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  static const mp_transport_vtable without = [] {
    mp_transport_vtable v = *mp::transport_vtable<fake::PatternTransport>();
    v.wait_result = nullptr;
    v.poll_result = nullptr;
    return v;
  }();
  static const std::array<mp_component_descriptor, 1> components = [] {
    mp_component_descriptor d = mp::make_transport_descriptor<fake::PatternTransport>(
        FAKE_NAME, "1.0.0", "has no wait_result or poll_result", MP_CAP_CPU);
    d.transport = &without;
    return std::to_array({d});
  }();
  return mp::fill_manifest(manifest, FAKE_NAME, "1.0.0", components);
}
