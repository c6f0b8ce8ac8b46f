// Declares ABI major MP_ABI_MAJOR + 1: must be refused.
#include "fake_transport.hpp"

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  static const mp_component_descriptor components[] = {mp::make_transport_descriptor<fake::PatternTransport>(
      "fake-wrong-major", "1.0.0", "declares a future ABI major", MP_CAP_CPU)};
  const mp_status s = mp::fill_manifest(manifest, "fake-wrong-major", "1.0.0", components);
  manifest->abi_major = MP_ABI_MAJOR + 1;
  return s;
}
