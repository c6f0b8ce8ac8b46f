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

namespace moepage::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;
namespace {

// "12,345,678"
std::string grouped(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

std::string human(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  return buf;
}

// "8GiB", "512MiB", "1.5GB", "4096" -> bytes (binary and decimal units, as profiles take them).
uint64_t parse_size(const std::string& text) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (...) {
  }
  const std::string unit = text.substr(used);
  static const std::map<std::string, double> scale = {{"", 1},          {"B", 1},          {"KiB", 1024.0},
                                                      {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
                                                      {"KB", 1e3},       {"MB", 1e6},       {"GB", 1e9}, {"TB", 1e12}};
  const auto it = scale.find(unit);
  if (v < 0 || it == scale.end() || v * it->second > 1.8e19)
    throw UsageError("--budget '" + text + "' is not a size such as 8GiB, 512MiB, 1.5GB or a byte count");
  return uint64_t(v * it->second);
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
  std::cout << "\ntensors: " << ck.tensors().size() << " in " << ck.files().size() << " file(s); numbered names folded as {*}\n";
  auto pad = [](std::string s, size_t w) { return s.size() < w ? s + std::string(w - s.size(), ' ') : s; };
  std::cout << "  " << pad("name", width + 2) << pad("dtype", 9) << pad("shape", 20) << pad("count", 8) << "bytes\n";
  for (const auto& [key, r] : rows)
    std::cout << "  " << pad(key.substr(0, key.find('\t')), width + 2) << pad(r.dtype, 9) << pad(r.shape, 20)
              << pad(std::to_string(r.count), 8) << grouped(r.bytes) << "\n";
}

void print_budget(uint64_t budget, const mp_model_info& info, const mp_expert_catalog& cat) {
  uint32_t paged_layers = 0;
  for (uint32_t l = 0; l < cat.n_layers; ++l) paged_layers += cat.has_experts[l] ? 1 : 0;
  const uint64_t per_slot_row = uint64_t(paged_layers) * cat.expert_bytes;  // one slot in every paged layer
  const uint64_t slots = per_slot_row ? std::min<uint64_t>(budget / per_slot_row, cat.n_experts) : 0;
  std::cout << "\nbudget " << human(budget) << " (" << grouped(budget) << " bytes), dense weights "
            << human(info.dense_bytes) << " placed separately\n";
  std::cout << "  slots per layer  " << slots << " of " << cat.n_experts << " = budget / (" << paged_layers
            << " layers x " << grouped(cat.expert_bytes) << " bytes per slot)\n";
  if (slots >= cat.n_experts)
    std::cout << "  every expert fits: one slot per expert, nothing evicted (the resident pager loads them all up front)\n";
  else if (slots < cat.top_k)
    std::cout << "  below top-k: " << slots << " slots cannot hold the " << cat.top_k << " experts a token uses; "
              << "the minimum budget is " << grouped(per_slot_row * cat.top_k) << " bytes ("
              << human(per_slot_row * cat.top_k) << ")\n";
  else
    std::cout << "  " << human(slots * per_slot_row) << " of slots; " << cat.n_experts - slots
              << " experts per layer stay on disk\n";
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  CommandSpec spec;
  spec.usage = "moepage inspect DIR [--budget SIZE] [--arch NAME] [--plugin-dir DIR]...";
  spec.summary =
      "Prints the architecture's summary of the checkpoint in DIR (config, layer schedule, bytes per expert),\n"
      "its tensors, and with --budget how many expert slots per layer that budget buys.";
  spec.options.add_options()
      ("dir", po::value<std::string>()->required()->value_name("DIR"), "the checkpoint folder")
      ("budget", po::value<std::string>()->value_name("SIZE"), "expert memory budget, e.g. 8GiB")
      ("arch", po::value<std::string>()->value_name("NAME"), "architecture plugin (default: the best probe)")
      ("plugin-dir", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
       "a folder to search for plugins first (repeatable)");
  spec.positional.add("dir", 1);
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;
  const fs::path dir = fs::absolute((*vm)["dir"].as<std::string>());
  if (!fs::is_directory(dir)) throw std::runtime_error("checkpoint folder " + dir.string() + " does not exist");
  const bool has_budget = vm->count("budget") > 0;
  const uint64_t budget = has_budget ? parse_size((*vm)["budget"].as<std::string>()) : 0;

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
