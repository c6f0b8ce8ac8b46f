// `moepage plugins`: every component the plugin folders provide, with its options, and every
// library or component that was refused and why.
#include <algorithm>
#include <array>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "host/host_api.hpp"
#include "host/registry.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "profile/option_validation.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace {

std::string capability_text(uint32_t caps) {
  static const std::pair<uint32_t, const char*> kNames[] = {{MP_CAP_CPU, "cpu"},
                                                            {MP_CAP_GPU, "gpu"},
                                                            {MP_CAP_ASYNC, "async"},
                                                            {MP_CAP_PREFETCH, "prefetch"},
                                                            {MP_CAP_SYNTHESIZE, "synthesize"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (!(caps & bit)) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out.empty() ? "-" : out;
}

std::string default_text(const mp_option_def& def) {
  if (def.default_value == nullptr) return "(required)";
  return "default " + std::string(*def.default_value != '\0' ? def.default_value : "\"\"");
}

void print_options(std::ostream& out, const mp_component_descriptor& d) {
  if (d.n_options == 0 || d.options == nullptr) {
    out << "    options: none\n";
    return;
  }
  out << "    options:\n";
  // Columns: name, type, default, help; each padded to its widest entry.
  std::vector<std::array<std::string, 4>> rows;
  std::array<size_t, 3> width{};
  for (const mp_option_def& def : mp::option_table(d)) {
    rows.push_back(
        {def.name ? def.name : "?", profile::option_type_name(def), default_text(def), def.help ? def.help : ""});
    for (size_t c = 0; c < width.size(); ++c) width[c] = std::max(width[c], rows.back()[c].size());
  }
  for (const auto& row : rows) {
    out << "      ";
    for (size_t c = 0; c < width.size(); ++c) out << row[c] << std::string(width[c] - row[c].size() + 2, ' ');
    out << row[3] << "\n";
  }
}

}  // namespace

int cmd_plugins(int argc, char** argv) {
  CommandSpec spec;
  spec.usage = "moepage plugins [--plugin-dir DIR]...";
  spec.summary =
      "Lists every component the plugin folders provide (kind, name, version, ABI, library, options with type,\n"
      "default and help) and every library or component that was refused, with the reason. Folders are searched\n"
      "in this order: each --plugin-dir, $MOEPAGE_PLUGIN_PATH, <exe>/../lib/moepage/plugins, the install folder.";
  spec.options.add_options()("plugin-dir", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
                             "a folder to search for plugins first (repeatable)");
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;

  const std::vector<std::string> dirs =
      vm->count("plugin-dir") ? (*vm)["plugin-dir"].as<std::vector<std::string>>() : std::vector<std::string>{};
  host::HostApi host;
  host::Registry registry(host.get());
  registry.scan(host::default_discovery_dirs(dirs));

  std::ostream& out = std::cout;
  out << "devices: " << built_devices_text() << "\n\n";
  out << "plugin folders searched:\n";
  for (const auto& dir : registry.scanned_dirs()) out << "  " << dir.string() << "\n";
  out << "\n";
  if (registry.components().empty()) out << "no components found\n";
  for (int32_t kind : {MP_KIND_ARCH, MP_KIND_PAGER, MP_KIND_TRANSPORT}) {
    for (const host::LoadedComponent& c : registry.components()) {
      if (c.kind() != kind) continue;
      const mp_component_descriptor& d = *c.descriptor;
      out << mp::kind_name(kind) << " " << c.name() << " " << (d.version ? d.version : "?") << "  (ABI " << c.abi_major
          << "." << c.abi_minor << ", plugin " << c.plugin_name << " " << c.plugin_version << ", capabilities "
          << capability_text(d.capabilities) << (c.score > 0 ? ", score " + std::to_string(c.score) : std::string())
          << ")\n";
      out << "    library: " << c.path.string() << "\n";
      out << "    " << (d.description && *d.description ? d.description : "(no description)") << "\n";
      print_options(out, d);
    }
  }
  if (!registry.refusals().empty()) {
    out << "\nrefused:\n";
    for (const host::Refusal& r : registry.refusals()) {
      // The message already names the library, the component and both ABI versions.
      out << "  " << r.message << (r.quiet ? " [skipped quietly]" : "") << "\n";
    }
  }
  return kExitOk;
}

}  // namespace moepage::cli
