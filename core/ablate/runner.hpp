// Runs an ablation: prepares the model (synthesizing it when the spec asks), resolves every arm's
// profile up front (so a bad key fails before an hour of runs), runs the optional warm-up, then
// every scheduled (repetition, arm, prompt) as a fresh `moepage run` process, and writes
// table.md, table.csv, table.json and plot.svg into the output folder.
//
// Why a child process per run rather than an in-process call: every arm then pays its own load
// and gets its own peak memory (wait4's rusage), one arm's plugins or leaks cannot colour the
// next arm's numbers, and a crash in one arm is reported instead of ending the study. So arms
// are reloaded per repetition, and the output says so.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ablate/spec.hpp"
#include "ablate/table.hpp"

namespace moepage::ablate {

// One run of one arm, as the executor sees it.
struct Invocation {
  std::string arm;
  std::filesystem::path profile;
  std::vector<std::string> sets;  // "key.path=value", in order
  std::filesystem::path model;
  const Prompt* prompt = nullptr;
  uint32_t max_tokens = 0;
  std::filesystem::path log_prefix;  // <out>/runs/<arm>-r<rep>-p<prompt>; add .stdout/.stderr/.stats.json
};

// Runs one invocation and measures it; throws std::runtime_error (naming the arm) on failure.
using Executor = std::function<Measurement(const Invocation&)>;

// Writes a synthetic checkpoint for a spec's model.synth into `dir` (through an architecture
// plugin; the CLI provides it). Throws on failure.
using Synthesizer = std::function<void(const SynthModel& model, const std::filesystem::path& dir, bool progress)>;

struct RunnerOptions {
  std::filesystem::path out_dir;
  Synthesizer synthesize;   // needed only when the spec synthesizes its model
  std::string command;      // the command line, for the report
  bool progress = false;    // one updating line on stderr (a TTY)
  bool print_table = true;  // the markdown table on stdout at the end
  bool pager_stats_available = false;
};

struct AblationResult {
  TableContext context;
  std::vector<ArmInfo> arms;
  std::vector<ArmRow> rows;
  std::vector<std::vector<ArmRun>> runs;  // [arm]
};

// What ${model}, ${out} and ${adapter} in an arm's set values stand for.
struct Placeholders {
  std::filesystem::path model, out, adapter;
};

// key=value strings of an arm's sets with the placeholders filled in.
std::vector<std::string> arm_sets(const Arm& arm, const Placeholders& vars);

// The resolved pager/transport/budget of every arm (loads each arm's profile with its sets);
// profile errors are rethrown as SpecError naming the spec and the arm.
std::vector<ArmInfo> resolve_arms(const Spec& spec, const Placeholders& vars);

// The model folder the runs use: the spec's folder, or <out>/model synthesized (reused when a
// previous run of the same synth options left it there).
std::filesystem::path prepare_model(const Spec& spec, const std::filesystem::path& out_dir, bool progress,
                                    const Synthesizer& synthesize);

// Writes <out>/adapter.hfadpt (random weights, the model's geometry from its config.json) when the
// spec asks for one; returns its path, or an empty path.
std::filesystem::path prepare_adapter(const Spec& spec, const std::filesystem::path& model,
                                      const std::filesystem::path& out_dir);

AblationResult run_ablation(const Spec& spec, const RunnerOptions& options, const Executor& execute);

// The executor that spawns `moepage_exe run ...` and reads its ids, log and --stats-json.
Executor spawn_executor(std::string moepage_exe, std::vector<std::string> plugin_dirs, bool use_stats_json);

// True when `moepage_exe run --help` lists --stats-json.
bool run_supports_stats_json(const std::string& moepage_exe);

// "x86_64, 2 cores, <model name>" from uname and /proc/cpuinfo.
std::string describe_machine();

}  // namespace moepage::ablate
