// `moepage inspect DIR [--budget SIZE]`: what a checkpoint holds and what a paging budget buys.
//
// The split: the architecture describes its own model (summary(): config, layer schedule, bytes
// per expert, through an arch instance, whose create() reads headers only); the core adds what is
// the same for every architecture: the tensor table from the checkpoint reader (names folded so
// a numbered family such as every layer's experts is one row), and the budget arithmetic from
// describe() and the expert catalog (slots per layer = budget / (layers with routed experts x
// slot bytes), capped at the expert count).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/component_resolution.hpp"
#include "host/host_api.hpp"
#include "host/registry.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "profile/profile.hpp"
#include "units/byte_size.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;
namespace {

// The --budget value in the one size grammar of profiles (moepage::units).
uint64_t budget_option(const std::string& text) {
  const std::optional<uint64_t> bytes = units::parse_size(text);
  if (!bytes) throw UsageError("--budget '" + text + "' is not " + std::string(units::kSizeExpectation));
  return *bytes;
}

// Digit runs between dots become {*}: layers.3.ffn.experts.17.w1.weight -> layers.{*}.ffn.experts.{*}.w1.weight
std::string fold_numbers(const std::string& name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    size_t j = i;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    const bool component = j > i && (i == 0 || name[i - 1] == '.') && (j == name.size() || name[j] == '.');
    if (component) {
      out += "{*}";
      i = j;
    } else {
      out += name[i++];
    }
  }
  return out;
}

void print_tensor_table(const fs::path& dir) {
  const ckpt::Checkpoint ck = ckpt::Checkpoint::open(dir);
  struct Row {
    std::string dtype, shape;
    uint64_t count = 0, bytes = 0;
  };
  std::map<std::string, Row> rows;  // folded name + dtype + shape -> row
  for (const ckpt::TensorInfo& t : ck.tensors()) {
    std::string shape = "[";
    for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
    shape += "]";
    const std::string dtype(dtype_name(t.dtype));
    Row& r = rows[fold_numbers(t.name) + "\t" + dtype + "\t" + shape];
    r.dtype = dtype;
    r.shape = shape;
    ++r.count;
    r.bytes += t.nbytes;
  }
  size_t width = 4;
  for (const auto& [key, r] : rows) width = std::max(width, key.find('\t'));
  std::cout << "\ntensors: " << ck.tensors().size() << " in " << ck.files().size()
            << " file(s); numbered names folded as {*}\n";
  auto pad = [](std::string s, size_t w) { return s.size() < w ? s + std::string(w - s.size(), ' ') : s; };
  std::cout << "  " << pad("name", width + 2) << pad("dtype", 9) << pad("shape", 20) << pad("count", 8) << "bytes\n";
  for (const auto& [key, r] : rows)
    std::cout << "  " << pad(key.substr(0, key.find('\t')), width + 2) << pad(r.dtype, 9) << pad(r.shape, 20)
              << pad(std::to_string(r.count), 8) << units::group_digits(r.bytes) << "\n";
}

void print_budget(uint64_t budget, const mp_model_info& info, const mp_expert_catalog& cat) {
  uint32_t paged_layers = 0;
  for (uint32_t l = 0; l < cat.n_layers; ++l) paged_layers += cat.has_experts[l] ? 1 : 0;
  const uint64_t per_slot_row = uint64_t(paged_layers) * cat.expert_bytes;  // one slot in every paged layer
  const uint64_t slots = per_slot_row ? std::min<uint64_t>(budget / per_slot_row, cat.n_experts) : 0;
  std::cout << "\nbudget " << units::format_bytes(budget) << " (" << units::group_digits(budget)
            << " bytes), dense weights " << units::format_bytes(info.dense_bytes) << " placed separately\n";
  std::cout << "  slots per layer  " << slots << " of " << cat.n_experts << " = budget / (" << paged_layers
            << " layers x " << units::group_digits(cat.expert_bytes) << " bytes per slot)\n";
  if (slots >= cat.n_experts)
    std::cout
        << "  every expert fits: one slot per expert, nothing evicted (the resident pager loads them all up front)\n";
  else if (slots < cat.top_k)
    std::cout << "  below top-k: " << slots << " slots cannot hold the " << cat.top_k << " experts a token uses; "
              << "the minimum budget is " << units::group_digits(per_slot_row * cat.top_k) << " bytes ("
              << units::format_bytes(per_slot_row * cat.top_k) << ")\n";
  else
    std::cout << "  " << units::format_bytes(slots * per_slot_row) << " of slots; " << cat.n_experts - slots
              << " experts per layer stay on disk\n";
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  CommandSpec spec;
  spec.usage = "moepage inspect DIR [--budget SIZE] [--arch NAME] [--plugin-dir DIR]...";
  spec.summary =
      "Prints the architecture's summary of the checkpoint in DIR (config, layer schedule, bytes per expert),\n"
      "its tensors, and with --budget how many expert slots per layer that budget buys.";
  spec.options.add_options()("dir", po::value<std::string>()->required()->value_name("DIR"), "the checkpoint folder")(
      "budget", po::value<std::string>()->value_name("SIZE"), "expert memory budget, e.g. 8GiB")(
      "arch", po::value<std::string>()->value_name("NAME"), "architecture plugin (default: the best probe)")(
      "plugin-dir", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "a folder to search for plugins first (repeatable)");
  spec.positional.add("dir", 1);
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;
  const fs::path dir = fs::absolute((*vm)["dir"].as<std::string>());
  if (!fs::is_directory(dir)) throw std::runtime_error("checkpoint folder " + dir.string() + " does not exist");
  const bool has_budget = vm->count("budget") > 0;
  const uint64_t budget = has_budget ? budget_option((*vm)["budget"].as<std::string>()) : 0;

  host::HostApi host;
  host::Registry registry(host.get());
  registry.scan(host::default_discovery_dirs(
      vm->count("plugin-dir") ? (*vm)["plugin-dir"].as<std::vector<std::string>>() : std::vector<std::string>{}));
  profile::Profile prof;  // only what architecture resolution reads: the model and, maybe, a name
  prof.source = "moepage inspect";
  prof.model = dir;
  if (vm->count("arch")) prof.arch = (*vm)["arch"].as<std::string>();
  ResolvedComponent arch = resolve_arch(registry, prof);

  const std::string d = dir.string();
  mp_arch_create_args args{sizeof(mp_arch_create_args), host.get(), arch.options.c_options(), d.c_str()};
  mp::ArchHandle handle = mp::ArchHandle::create(*arch.component->descriptor, arch.component->library, args);
  const mp_model_info info = handle.describe();
  const mp_expert_catalog* cat = handle.expert_catalog();
  std::cout << "architecture " << arch.component->name() << "\n";
  if (const auto text = handle.summary()) std::cout << *text;
  print_tensor_table(dir);
  if (has_budget) print_budget(budget, info, *cat);
  return kExitOk;
}

}  // namespace moepage::cli
