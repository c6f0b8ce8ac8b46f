// `moepage ablate SPEC.yaml`: runs the spec's arms (each run a fresh `moepage run` of this same
// binary) interleaved over repetitions and writes the table and the plot (see core/ablate).
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "ablate/runner.hpp"
#include "ablate/spec.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/synthesize.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;

int cmd_ablate(int argc, char** argv) {
  CommandSpec spec;
  spec.usage = "moepage ablate SPEC.yaml [--out DIR] [--repetitions N] [--plugin-dir DIR]... [--progress | --quiet]";
  spec.summary =
      "Runs every arm of SPEC (a base profile plus --set-style overrides, or another profile) over the spec's\n"
      "repetitions and prompts, interleaved or shuffled, each run a fresh `moepage run` process (so every arm\n"
      "reloads per repetition), and prints one table: prefill and decode tok/s (mean ± sd, n), ms/token split,\n"
      "hit rate, bytes read per token, prefetches, load time, peak memory and ids==arm0 (the neutrality check\n"
      "against the first arm). Writes table.md, table.csv, table.json, plot.svg and runs/ (each run's logs)\n"
      "into DIR. Progress goes to stderr when it is a terminal.";
  spec.options.add_options()("spec", po::value<std::string>()->required()->value_name("SPEC"),
                             "the ablation spec (YAML)")("out", po::value<std::string>()->value_name("DIR"),
                                                         "output folder (default ablation-<spec name>)")(
      "plugin-dir", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "passed to every `moepage run` (repeatable)")("repetitions", po::value<std::string>()->value_name("N"),
                                                    "override the spec's repetitions (1 to 1000)")(
      "progress", po::bool_switch(), "show progress even when stderr is not a terminal")(
      "quiet", po::bool_switch(), "no progress, and no table on stdout");
  spec.positional.add("spec", 1);
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;

  const fs::path spec_path = (*vm)["spec"].as<std::string>();
  ablate::Spec ablation = ablate::load_spec(spec_path);
  if (const auto n = integer_option(*vm, "repetitions", 1, 1000)) ablation.repetitions = uint32_t(*n);
  ablate::RunnerOptions options;
  options.out_dir =
      vm->count("out") ? fs::path((*vm)["out"].as<std::string>()) : fs::path("ablation-" + spec_path.stem().string());
  const bool quiet = (*vm)["quiet"].as<bool>();
  options.progress = !quiet && ((*vm)["progress"].as<bool>() || ::isatty(STDERR_FILENO));
  options.print_table = !quiet;
  for (int i = 0; i < argc; ++i) options.command += (i ? " " : "moepage ") + std::string(argv[i]);

  // The children are this very binary, so the arms run exactly the code `moepage run` runs.
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  options.pager_stats_available = ablate::run_supports_stats_json(self);
  std::vector<std::string> plugin_dirs;
  if (vm->count("plugin-dir")) {
    for (const auto& d : (*vm)["plugin-dir"].as<std::vector<std::string>>())
      plugin_dirs.push_back(fs::absolute(d).string());
  }
  // model.synth: through the architecture plugin that synthesizes, as `moepage synth` does.
  options.synthesize = [&plugin_dirs](const ablate::SynthModel& m, const fs::path& dir, bool progress) {
    const std::string out = dir.string();
    const std::string dtype = m.expert_dtype.value_or("");
    mp_synth_request req{};
    req.struct_size = sizeof req;
    req.preset = m.preset.c_str();
    req.out_dir = out.c_str();
    req.seed = m.seed;
    req.layers = int32_t(m.layers.value_or(0));
    req.experts = int32_t(m.experts.value_or(0));
    req.expert_dtype = dtype.c_str();
    req.show_progress = progress ? 1 : 0;
    synthesize_checkpoint(plugin_dirs, "", req);
  };
  ablate::run_ablation(ablation, options, ablate::spawn_executor(self, plugin_dirs, options.pager_stats_available));
  if (!quiet) {
    std::cout << "\nwrote " << (options.out_dir / "table.md").string() << ", table.csv, table.json and plot.svg\n";
  }
  return kExitOk;
}

}  // namespace moepage::cli
