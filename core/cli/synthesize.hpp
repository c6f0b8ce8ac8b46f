// Synthesizing a checkpoint through an architecture plugin, shared by `moepage synth` and by
// `moepage ablate` (a spec's model.synth). The core knows no architecture: the plugin named by
// `arch`, or else the only one declaring MP_CAP_SYNTHESIZE, does the work.
#pragma once
#include <string>
#include <vector>

#include "host/registry.hpp"
#include "moepage/arch.h"

namespace moepage::cli {

// The architecture that synthesizes: `name` when given, else the only one with MP_CAP_SYNTHESIZE.
// Throws UsageError when none or several qualify.
const host::LoadedComponent& synthesizing_arch(const host::Registry& registry, const std::string& name);

// Scans `plugin_dirs` (then the default folders), picks the architecture as above and runs its
// synthesize() with `request`; returns the architecture's name. Throws on any failure.
std::string synthesize_checkpoint(const std::vector<std::string>& plugin_dirs, const std::string& arch,
                                  const mp_synth_request& request);

}  // namespace moepage::cli
