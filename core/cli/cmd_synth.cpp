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

int32_t positive_or_zero(const po::variables_map& vm, const char* key) {
  if (!vm.count(key)) return 0;
  const int64_t v = vm[key].as<int64_t>();
  if (v < 1 || v > (int64_t(1) << 20)) throw UsageError(std::string("--") + key + " must be 1 or more, got " + std::to_string(v));
  return int32_t(v);
}

}  // namespace

int cmd_synth(int argc, char** argv) {
  CommandSpec spec;
  spec.usage = "moepage synth --preset tiny|small|flash --out DIR [--layers N] [--experts E] "
               "[--expert-dtype fp4|fp8|bf16] [--seed S] [--arch NAME]";
  spec.summary =
      "Writes a checkpoint with random weights (deterministic per seed) in the architecture's layout, so the\n"
      "engine runs without downloading anything. Presets and dtypes are the architecture's; for deepseek4:\n"
      "tiny and small run interactively on a CPU, flash has the released model's per-expert geometry.";
  spec.options.add_options()
      ("preset", po::value<std::string>()->default_value("tiny")->value_name("NAME"), "geometry preset")
      ("out", po::value<std::string>()->required()->value_name("DIR"), "folder to write (created)")
      ("layers", po::value<int64_t>()->value_name("N"), "decoder layers (default: the preset's)")
      ("experts", po::value<int64_t>()->value_name("E"), "routed experts per layer (default: the preset's)")
      ("expert-dtype", po::value<std::string>()->value_name("T"), "routed expert weights: fp4, fp8 or bf16")
      ("seed", po::value<uint64_t>()->default_value(0)->value_name("S"), "random seed")
      ("arch", po::value<std::string>()->value_name("NAME"), "architecture plugin (default: the only one that synthesizes)")
      ("plugin-dir", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
       "a folder to search for plugins first (repeatable)");
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;

  const std::string preset = (*vm)["preset"].as<std::string>();
  const std::string out = (*vm)["out"].as<std::string>();
  const std::string dtype = vm->count("expert-dtype") ? (*vm)["expert-dtype"].as<std::string>() : std::string();
  mp_synth_request req{};
  req.struct_size = sizeof req;
  req.preset = preset.c_str();
  req.out_dir = out.c_str();
  req.seed = (*vm)["seed"].as<uint64_t>();
  req.layers = positive_or_zero(*vm, "layers");
  req.experts = positive_or_zero(*vm, "experts");
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
