// A transport without ABI 1.4's wait_result and poll_result. Built twice: declaring minor 4 it is
// refused (1.4 requires them), declaring minor 3 (MIN_ABI_MINOR 3) it loads.
#include "fake_transport.hpp"

#define FAKE_NAME (MP_PLUGIN_ABI_MINOR >= 4 ? "fake-no-results-14" : "fake-no-results-13")

namespace {

const mp_transport_vtable* without_results() {
  return fake::edited_vtable([](mp_transport_vtable& v) {
    v.wait_result = nullptr;
    v.poll_result = nullptr;
  });
}

}  // namespace

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  return fake::query_one_transport(manifest, FAKE_NAME, "has no wait_result or poll_result",
                                   [](mp_component_descriptor& d) { d.transport = without_results(); });
}
