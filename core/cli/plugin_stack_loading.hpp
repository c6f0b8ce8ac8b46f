// Building a profile's plugin stack (architecture, transport, pager) so it can generate many
// times: `moepage run` builds one and generates once; `moepage serve` keeps one for its lifetime
// and builds another when the profile is swapped. Resolution (finding the plugins and checking
// their options) is separate from creation, so a bad profile fails before anything is loaded.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "cli/component_resolution.hpp"
#include "host/plugin_stack.hpp"
#include "host/registry.hpp"
#include "profile/profile.hpp"
#include "tokenizer/tokenizer.hpp"

namespace moepage::cli {

// The components a profile names, found in the registry and with their options validated.
struct ResolvedStack {
  ResolvedComponent arch, transport, pager;
  std::string model_dir;
};

// A created stack and what the architecture says about the model.
struct LoadedStack {
  host::PluginStack stack;
  mp_model_info info{};
  const mp_expert_catalog* catalog = nullptr;  // valid while stack.arch lives
  // Wall time from creating the architecture to binding the pager to it.
  double load_seconds = 0;
};

// Given the new pager before the architecture is bound to it, returns the ref to bind: the
// pager's own, or one that records calls on the way (`moepage run --trace`).
using PagerBinder = std::function<mp_pager_ref(mp::PagerHandle& pager, const mp_expert_catalog& catalog)>;

// Throws naming the profile when it names no model folder, or the folder does not exist.
void require_model_folder(const profile::Profile& prof);

// Finds the profile's arch, transport and pager and validates their options; throws the
// registry's or the option table's error (naming the profile key) before anything is created.
ResolvedStack resolve_stack(const host::Registry& registry, const profile::Profile& prof);

// Creates arch -> transport -> pager and binds the pager. Throws the plugin's error (for a pager,
// e.g. a budget below what the model needs) with whatever was created already torn down.
LoadedStack create_stack(ResolvedStack& resolved, const mp_host_api* host, const PagerBinder& binder = {});

// The model folder's tokenizer.json, or nullopt when it has none.
std::optional<tokenizer::Tokenizer> load_model_tokenizer(const std::filesystem::path& model_dir);

}  // namespace moepage::cli
