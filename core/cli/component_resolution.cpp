#include "cli/component_resolution.hpp"

#include <stdexcept>
#include <vector>

#include "host/log.hpp"
#include "moepage/cpp/host_handles.hpp"

namespace moepage::cli {
namespace {

int32_t kind_of_section(const std::string& section) {
  if (section == "pager") return MP_KIND_PAGER;
  if (section == "transport") return MP_KIND_TRANSPORT;
  if (section == "arch") return MP_KIND_ARCH;
  throw std::logic_error("no component kind for profile section '" + section + "'");
}

std::string list_names(const host::Registry& registry, int32_t kind) {
  std::string out;
  for (const std::string& n : registry.names(kind)) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none found; check --plugin-dir" : out;
}

}  // namespace

ResolvedComponent resolve_component(const host::Registry& registry, const profile::ComponentSpec& spec,
                                    const std::string& profile_file) {
  const int32_t kind = kind_of_section(spec.section);
  if (spec.plugin.empty()) {
    throw profile::ProfileError(profile_file + ": " + spec.section + ".plugin is not set (available " + spec.section +
                                " plugins: " + list_names(registry, kind) +
                                "; or auto, the best-scoring one on this host)");
  }
  ResolvedComponent out;
  try {
    out.component = spec.plugin == host::kAutoName ? &registry.best(kind) : &registry.find(kind, spec.plugin);
  } catch (const host::RegistryError& e) {
    throw profile::ProfileError(spec.plugin_where + ": " + spec.section + ".plugin: " + e.what());
  }
  if (spec.plugin == host::kAutoName)
    host::logger("registry")
        ->info("{}.plugin: auto chose '{}' (score {} on this host)", spec.section, out.component->name(),
               out.component->score);
  // The profile names options of the component chosen, as if it had been named.
  profile::ComponentSpec chosen = spec;
  chosen.plugin = out.component->name();
  const std::vector<mp_option_def> table = mp::option_table(*out.component->descriptor);
  out.options = profile::validate_options(chosen, table);
  return out;
}

ResolvedComponent resolve_arch(const host::Registry& registry, const profile::Profile& profile) {
  // The profile's arch options (arch: {plugin: NAME, threads: 8}) are checked against the table
  // of the architecture picked, by name or by probing.
  profile::ComponentSpec spec = profile.arch_spec;
  spec.plugin = profile.arch;
  if (spec.plugin_where.empty()) spec.plugin_where = profile.source.string();
  ResolvedComponent out;
  if (!profile.arch.empty()) {
    try {
      out.component = &registry.find(MP_KIND_ARCH, profile.arch);
    } catch (const host::RegistryError& e) {
      throw profile::ProfileError(profile.source.string() + ": arch: " + e.what());
    }
  } else {
    int32_t best = 0;
    std::string declined;  // "name: why; name: why" from what each probe logged
    for (const host::LoadedComponent& c : registry.components()) {
      if (c.kind() != MP_KIND_ARCH) continue;
      host::LogCapture capture(spdlog::level::debug);
      const int32_t score = mp::ArchHandle::probe(*c.descriptor, registry.host(), profile.model.string());
      if (score > best) {
        best = score;
        out.component = &c;
      }
      if (score <= 0) {
        std::string why;
        for (const std::string& line : capture.lines()) {
          const size_t colon = line.find(": ");
          why += (why.empty() ? "" : "; ") + (colon == std::string::npos ? line : line.substr(colon + 2));
        }
        declined +=
            (declined.empty() ? "" : "; ") + c.name() + ": " + (why.empty() ? "declined without a reason" : why);
      }
    }
    if (out.component == nullptr) {
      throw std::runtime_error("no architecture plugin recognises the model folder " + profile.model.string() + " (" +
                               (declined.empty() ? "no architecture plugin found" : declined) +
                               "); name one with arch:");
    }
    spec.plugin = out.component->name();
  }
  const std::vector<mp_option_def> table = mp::option_table(*out.component->descriptor);
  out.options = profile::validate_options(spec, table);
  return out;
}

}  // namespace moepage::cli
