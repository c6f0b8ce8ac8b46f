// Finds the components a profile names in the registry and validates their options against the
// component's option table. The architecture is either named by the profile or chosen by probing
// the model folder (the highest score wins).
#pragma once
#include <string>

#include "host/registry.hpp"
#include "profile/option_validation.hpp"
#include "profile/profile.hpp"

namespace moepage::cli {

struct ResolvedComponent {
  const host::LoadedComponent* component = nullptr;
  profile::ResolvedOptions options;
};

// The pager or transport of `spec` (spec.section says which). Errors name the profile location
// and list the available names of that kind.
ResolvedComponent resolve_component(const host::Registry& registry, const profile::ComponentSpec& spec,
                                    const std::string& profile_file);

// The architecture the profile names, or the best-scoring probe of `profile.model`.
ResolvedComponent resolve_arch(const host::Registry& registry, const profile::Profile& profile);

}  // namespace moepage::cli
