// An option table as a plugin built against a later minor would have it: each mp_option_def is
// followed by 16 bytes this host does not know, and struct_size says so. The host must walk the
// table with that stride (host_api.h) and read every option right.
#include <array>

#include "fake_transport.hpp"

namespace {
struct WiderOption {
  mp_option_def def;
  uint64_t newer[2];
};
WiderOption wider(mp_option_def def) {
  def.struct_size = sizeof(WiderOption);
  return WiderOption{def, {0xDEADBEEFDEADBEEFull, 0xDEADBEEFDEADBEEFull}};
}
}  // namespace

extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api*, mp_plugin_manifest* manifest) {
  static const std::array<WiderOption, 3> table = {
      wider(mp::option(MP_OPT_INT, "threads", "2", "reader threads")),
      wider(mp::enum_option("policy", "lru|lfu", "lfu", "eviction policy")),
      wider(mp::option(MP_OPT_SIZE, "chunk", "1MiB", "read size")),
  };
  return fake::query_one_transport(manifest, "fake-wide-options", "wide option table", [](mp_component_descriptor& d) {
    d.n_options = static_cast<uint32_t>(table.size());
    d.options = &table[0].def;
  });
}
