// `moepage conform PLUGIN.so`: runs the conformance suite (core/conform) on every transport and
// pager component of one plugin library and prints a PASS/FAIL checklist. Exit codes: 0 every
// check passed; 1 a check failed or the library could not be used; 2 usage; 3 nothing failed but
// a component declared itself not available yet (MP_ERR_NOT_AVAILABLE), so it was not checked.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "conform/checklist.hpp"
#include "conform/conformance.hpp"
#include "host/host_api.hpp"
#include "host/plugin_loader.hpp"
#include "host/registry.hpp"
#include "moepage/cpp/host_handles.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace {

constexpr int kExitNotAvailable = 3;

std::vector<std::pair<std::string, std::string>> parse_assignments(const std::vector<std::string>& items) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--option '" + item + "': expected key=value");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

}  // namespace

int cmd_conform(int argc, char** argv) {
  CommandSpec spec;
  spec.usage = "moepage conform PLUGIN.so [--component NAME] [--option key=value]... [--transport NAME]";
  spec.summary =
      "Runs the conformance suite on every transport and pager component of one plugin library: byte-exact reads of\n"
      "a generated file over random, overlapping, boundary and concurrent ranges, errors that name the file, poll and\n"
      "wait, stats, lifetime, option validation; for pagers, byte-exact slots over a synthetic expert catalog read\n"
      "through --transport. Prints PASS/FAIL per check. Exit 0: all passed; 1: a failure; 3: the component says it\n"
      "is not available yet (nothing else checked).";
  spec.options.add_options()("library", po::value<std::string>()->value_name("PLUGIN.so"),
                             "the plugin library to check")("component", po::value<std::string>()->value_name("NAME"),
                                                            "check only the component with this name")(
      "option", po::value<std::vector<std::string>>()->composing()->value_name("KEY=VALUE"),
      "an option for the component under test (repeatable); the others keep their defaults")(
      "transport", po::value<std::string>()->default_value("pread")->value_name("NAME"),
      "the transport pagers read through, found in the plugin folders")(
      "plugin-dir", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "a folder to search first for --transport (repeatable)")("seed", po::value<std::string>()->default_value("1"),
                                                               "seed of the generated files and random ranges")(
      "scratch", po::value<std::string>()->value_name("DIR"),
      "where the temporary sample files go (default: the system's temporary folder); choose the disk to test");
  spec.positional.add("library", 1);
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;
  if (!vm->count("library")) throw UsageError("conform needs the plugin library to check (PLUGIN.so)");

  const std::string library = (*vm)["library"].as<std::string>();
  conform::ConformConfig config;
  config.seed = uint64_t(*integer_option(*vm, "seed", 0, INT64_MAX));
  if (!std::filesystem::is_regular_file(library)) throw std::runtime_error(library + ": no such plugin library");
  config.options = parse_assignments(strings_of(*vm, "option"));
  if (vm->count("scratch")) config.scratch = (*vm)["scratch"].as<std::string>();
  const std::string only = vm->count("component") ? (*vm)["component"].as<std::string>() : std::string();

  host::HostApi host;
  const host::LoadResult loaded = host::load_plugin(library, host.get());
  std::ostream& out = std::cout;
  std::vector<const host::LoadedComponent*> targets;
  std::string names;
  for (const host::LoadedComponent& c : loaded.components) {
    names += (names.empty() ? "" : ", ") + std::string(mp::kind_name(c.kind())) + " '" + c.name() + "'";
    if (c.kind() != MP_KIND_TRANSPORT && c.kind() != MP_KIND_PAGER) continue;
    if (!only.empty() && c.name() != only) continue;
    targets.push_back(&c);
  }
  if (targets.empty()) {
    // The loader logged each refusal; repeat them here so the one error line is complete.
    std::string refused;
    for (const host::Refusal& r : loaded.refusals) {
      if (!r.quiet) refused += "; " + r.message;
    }
    throw std::runtime_error(
        library + ": no " +
        (only.empty() ? "transport or pager component" : "transport or pager named '" + only + "'") +
        " to check (the library provides: " + (names.empty() ? "nothing usable" : names) + ")" + refused);
  }

  // Pagers read through a working transport from the plugin folders, as in a real run.
  host::Registry registry(host.get());
  bool registry_scanned = false;

  conform::Checklist list(&out);
  for (const host::LoadedComponent* c : targets) {
    const mp_component_descriptor& d = *c->descriptor;
    out << "\n";
    list.begin_group(std::string(mp::kind_name(d.kind)) + " '" + c->name() + "' " + (d.version ? d.version : "?") +
                     " from " + c->path.string() + " (plugin " + c->plugin_name + " " + c->plugin_version + ", ABI " +
                     std::to_string(c->abi_major) + "." + std::to_string(c->abi_minor) + ")");
    const conform::Component component{c->descriptor, c->library, c->abi_minor};
    if (d.kind == MP_KIND_TRANSPORT) {
      conform::run_transport_checks(component, host.get(), config, list);
      continue;
    }
    if (!registry_scanned) {
      registry.scan(host::default_discovery_dirs(strings_of(*vm, "plugin-dir")));
      registry_scanned = true;
    }
    const std::string transport = (*vm)["transport"].as<std::string>();
    const host::LoadedComponent* t = nullptr;
    try {
      t = &registry.find(MP_KIND_TRANSPORT, transport);
    } catch (const host::RegistryError& e) {
      list.record("the transport '" + transport + "' to read through is found", false, e.what());
      continue;
    }
    conform::run_pager_checks(component, conform::Component{t->descriptor, t->library, t->abi_minor}, host.get(),
                              config, list);
  }
  out << "\n" << list.summary() << "\n";
  if (list.failures() > 0) return kExitError;
  return list.skipped() > 0 ? kExitNotAvailable : kExitOk;
}

}  // namespace moepage::cli
