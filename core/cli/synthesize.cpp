#include "cli/synthesize.hpp"

#include "cli/cli_common.hpp"
#include "host/host_api.hpp"
#include "moepage/cpp/host_handles.hpp"

namespace moepage::cli {

const host::LoadedComponent& synthesizing_arch(const host::Registry& registry, const std::string& name) {
  if (!name.empty()) return registry.find(MP_KIND_ARCH, name);
  std::vector<const host::LoadedComponent*> able;
  for (const host::LoadedComponent& c : registry.components())
    if (c.kind() == MP_KIND_ARCH && (c.descriptor->capabilities & MP_CAP_SYNTHESIZE) != 0) able.push_back(&c);
  if (able.size() == 1) return *able.front();
  std::string names;
  for (const auto* c : able) names += (names.empty() ? "" : ", ") + c->name();
  throw UsageError(able.empty() ? "no architecture plugin can synthesize checkpoints (none declares MP_CAP_SYNTHESIZE)"
                                : "several architectures can synthesize (" + names + "); pick one with --arch");
}

std::string synthesize_checkpoint(const std::vector<std::string>& plugin_dirs, const std::string& arch,
                                  const mp_synth_request& request) {
  host::HostApi host;
  host::Registry registry(host.get());
  registry.scan(host::default_discovery_dirs(plugin_dirs));
  const host::LoadedComponent& chosen = synthesizing_arch(registry, arch);
  mp::ArchHandle::synthesize(*chosen.descriptor, host.get(), request);
  return chosen.name();
}

}  // namespace moepage::cli
