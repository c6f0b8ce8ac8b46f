// `moepage synth`: writes a synthetic checkpoint through an architecture plugin's synthesize().
// The CLI knows no architecture: --arch picks one by name, otherwise the only architecture that
// declares MP_CAP_SYNTHESIZE is used.
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/synthesize.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;
namespace {

// Bounds on what a synthetic checkpoint may hold: the released models have tens of layers and
// hundreds of experts, and every expert more is bytes on disk.
constexpr int64_t kMaxSynthLayers = 256;
constexpr int64_t kMaxSynthExperts = 1024;

// The folder synthesize() may write: absent, empty, or (with --force) one to replace. A folder that
// holds a model would otherwise end as a mix of the old files and the random ones.
void check_out_folder(const fs::path& out, bool force) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  if (!fs::is_directory(out, ec)) throw UsageError("--out " + out.string() + " exists and is not a folder");
  if (fs::is_empty(out, ec)) return;
  if (!force) throw UsageError("--out " + out.string() + " is not empty; pass --force to replace what it holds");
  // A model folder is flat: a folder with subfolders is not one to empty on a flag.
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.is_directory(ec) && !e.is_symlink(ec))
      throw UsageError("--out " + out.string() + " holds the folder " + e.path().filename().string() +
                       "; --force replaces only a folder of files");
    files.push_back(e.path());
  }
  for (const fs::path& f : files) {
    if (!fs::remove(f, ec) || ec) throw std::runtime_error("--out: cannot remove " + f.string() + ": " + ec.message());
  }
}

}  // namespace

int cmd_synth(int argc, char** argv) {
  CommandSpec spec;
  spec.usage =
      "moepage synth --preset tiny|small|flash --out DIR [--force] [--layers N] [--experts E] "
      "[--expert-dtype fp4|fp8|bf16] [--seed S] [--arch NAME]";
  spec.summary =
      "Writes a checkpoint with random weights (deterministic per seed) in the architecture's layout, so the\n"
      "engine runs without downloading anything. Presets and dtypes are the architecture's; for deepseek4:\n"
      "tiny and small run interactively on a CPU, flash has the released model's per-expert geometry.";
  spec.options.add_options()("preset", po::value<std::string>()->default_value("tiny")->value_name("NAME"),
                             "geometry preset")("out", po::value<std::string>()->required()->value_name("DIR"),
                                                "folder to write (created)")(
      "force", po::bool_switch(), "replace what a non-empty --out folder holds")(
      "layers", po::value<std::string>()->value_name("N"), "decoder layers, 1 to 256 (default: the preset's)")(
      "experts", po::value<std::string>()->value_name("E"),
      "routed experts per layer, 1 to 1024 (default: the preset's)")(
      "expert-dtype", po::value<std::string>()->value_name("T"), "routed expert weights: fp4, fp8 or bf16")(
      "seed", po::value<std::string>()->default_value("0")->value_name("S"), "random seed")(
      "arch", po::value<std::string>()->value_name("NAME"),
      "architecture plugin (default: the only one that synthesizes)")(
      "plugin-dir", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "a folder to search for plugins first (repeatable)");
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;
  const int64_t layers = integer_option(*vm, "layers", 1, kMaxSynthLayers).value_or(0);
  const int64_t experts = integer_option(*vm, "experts", 1, kMaxSynthExperts).value_or(0);
  const uint64_t seed = uint64_t(*integer_option(*vm, "seed", 0, INT64_MAX));
  check_out_folder((*vm)["out"].as<std::string>(), (*vm)["force"].as<bool>());

  const std::string preset = (*vm)["preset"].as<std::string>();
  const std::string out = (*vm)["out"].as<std::string>();
  const std::string dtype = vm->count("expert-dtype") ? (*vm)["expert-dtype"].as<std::string>() : std::string();
  mp_synth_request req{};
  req.struct_size = sizeof req;
  req.preset = preset.c_str();
  req.out_dir = out.c_str();
  req.seed = seed;
  req.layers = int32_t(layers);
  req.experts = int32_t(experts);
  req.expert_dtype = dtype.c_str();
  req.show_progress = 1;
  const std::vector<std::string> plugin_dirs =
      vm->count("plugin-dir") ? (*vm)["plugin-dir"].as<std::vector<std::string>>() : std::vector<std::string>{};
  const std::string arch =
      synthesize_checkpoint(plugin_dirs, vm->count("arch") ? (*vm)["arch"].as<std::string>() : std::string(), req);

  uint64_t bytes = 0, files = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (!entry.is_regular_file()) continue;
    bytes += entry.file_size();
    ++files;
  }
  std::cout << "wrote " << out << " (" << arch << " preset " << preset << "): " << files << " files, " << bytes
            << " bytes\n";
  return kExitOk;
}

}  // namespace moepage::cli
