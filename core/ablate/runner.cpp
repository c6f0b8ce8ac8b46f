#include "ablate/runner.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "ablate/child_process.hpp"
#include "ablate/schedule.hpp"
#include "ablate/svg_plot.hpp"
#include "fileio/text_file.hpp"
#include "output/output_file.hpp"
#include "profile/profile.hpp"
#include "profile/yaml_quote.hpp"
#include "units/byte_size.hpp"

namespace moepage::ablate {
namespace fs = std::filesystem;
namespace {

void write_text(const fs::path& path, const std::string& text) { output::write_file(path, text, "ablate"); }

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "(no output)";
  const size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// A file-name-safe version of an arm name.
std::string slug(const std::string& name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

std::vector<std::string> arm_sets(const Arm& arm, const Placeholders& vars) {
  std::vector<std::string> sets;
  for (const auto& [key, value] : arm.sets) {
    std::string v = value;
    replace_all(v, "${model}", vars.model.string());
    replace_all(v, "${out}", vars.out.string());
    replace_all(v, "${adapter}", vars.adapter.string());
    sets.push_back(key + "=" + v);
  }
  return sets;
}

std::string describe_machine() {
  struct utsname u {};
  std::string machine = ::uname(&u) == 0 ? u.machine : "unknown";
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  std::string cpu;
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) cpu = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  return machine + ", " + std::to_string(cores) + " cores" + (cpu.empty() ? "" : ", " + cpu);
}

std::vector<ArmInfo> resolve_arms(const Spec& spec, const Placeholders& vars) {
  std::vector<ArmInfo> infos;
  for (const Arm& arm : spec.arms) {
    const std::vector<std::string> sets = arm_sets(arm, vars);
    profile::Profile p;
    try {
      p = profile::load_profile(arm.profile, sets, spec.source.parent_path());
    } catch (const std::exception& e) {
      throw SpecError(spec.source.string() + ": arm '" + arm.name + "': " + e.what());
    }
    ArmInfo info;
    info.name = arm.name;
    info.pager = p.pager.plugin;
    info.transport = p.transport.plugin;
    info.series = info.pager;
    for (const profile::OptionSetting& o : p.pager.options) {
      if (o.name == "budget") {
        info.budget_text = o.text;
        info.budget = units::parse_size(o.text);
      }
      // One pager under two eviction policies is two curves, not one zig-zag.
      if (o.name == "policy" && o.text != "lru") info.series += " (" + o.text + ")";
    }
    // Expert-parallel ranks: the budget is per rank, so the group holds ranks x budget; a curve of
    // its own, and the table says both.
    if (p.parallel.ranks > 1) {
      const std::string ranks = std::to_string(p.parallel.ranks);
      info.series += " x" + ranks + " ranks";
      if (info.budget) *info.budget *= p.parallel.ranks;
      if (!info.budget_text.empty()) info.budget_text += " per rank x" + ranks;
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

bool run_supports_stats_json(const std::string& moepage_exe) {
  return capture_stdout({moepage_exe, "run", "--help"}).find("--stats-json") != std::string::npos;
}

Executor spawn_executor(std::string moepage_exe, std::vector<std::string> plugin_dirs, bool use_stats_json) {
  return [exe = std::move(moepage_exe), dirs = std::move(plugin_dirs), use_stats_json](const Invocation& inv) {
    // The timing line the measurement reads is logged at info.
    std::vector<std::string> argv = {exe,
                                     "--log-level",
                                     "info",
                                     "run",
                                     "--profile",
                                     inv.profile.string(),
                                     "--model",
                                     inv.model.string(),
                                     "--max-tokens",
                                     std::to_string(inv.max_tokens)};
    for (const std::string& d : dirs) argv.insert(argv.end(), {"--plugin-dir", d});
    for (const std::string& s : inv.sets) argv.insert(argv.end(), {"--set", s});
    if (inv.prompt->ids) {
      std::string ids;
      for (int32_t id : *inv.prompt->ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
      argv.insert(argv.end(), {"--prompt-ids", ids});
    } else {
      // Clear ids a base profile may set, so the text is what runs.
      argv.insert(argv.end(), {"--set", "generate.prompt_ids=", "--set",
                               "generate.prompt=" + profile::yaml_quote(*inv.prompt->text)});
    }
    const fs::path out = inv.log_prefix.string() + ".stdout", err = inv.log_prefix.string() + ".stderr",
                   stats = inv.log_prefix.string() + ".stats.json";
    if (use_stats_json) argv.insert(argv.end(), {"--stats-json", stats.string()});
    const ChildResult r = run_child(argv, out, err);
    const std::string err_text = fileio::try_read_file(err).value_or("");
    if (!r.ok()) {
      throw std::runtime_error("arm '" + inv.arm + "': moepage run failed (" + r.describe() +
                               "): " + last_line(err_text) + " (log: " + err.string() + ")");
    }
    Measurement m;
    m.ids = parse_token_ids(fileio::try_read_file(out).value_or(""), "arm '" + inv.arm + "' (" + out.string() + ")");
    m.generated = uint32_t(m.ids.size());
    if (!parse_timing_line(err_text, m)) {
      throw std::runtime_error("arm '" + inv.arm + "': no 'prefill N tokens in X s; decode M tokens in Y s' line in " +
                               err.string());
    }
    m.wall_seconds = r.wall_seconds;
    m.peak_rss_bytes = r.peak_rss_bytes;
    if (use_stats_json && fs::exists(stats)) apply_stats_json(fileio::read_file(stats), stats.string(), m);
    if (!m.load_seconds) {
      m.load_seconds = std::max(0.0, r.wall_seconds - m.prefill_seconds - m.decode_seconds);
      m.load_is_estimate = true;
    }
    return m;
  };
}

AblationResult run_ablation(const Spec& spec, const RunnerOptions& options, const Executor& execute) {
  AblationResult result;
  fs::create_directories(options.out_dir / "runs");
  Placeholders vars;
  vars.out = fs::absolute(options.out_dir);
  vars.model = fs::absolute(prepare_model(spec, vars.out, options.progress, options.synthesize));
  vars.adapter = prepare_adapter(spec, vars.model, vars.out);
  const fs::path& model = vars.model;
  result.arms = resolve_arms(spec, vars);

  auto invocation = [&](uint32_t arm, uint32_t prompt, uint32_t tokens, const std::string& tag) {
    Invocation inv;
    inv.arm = spec.arms[arm].name;
    inv.profile = spec.arms[arm].profile;
    inv.sets = arm_sets(spec.arms[arm], vars);
    inv.model = model;
    inv.prompt = &spec.prompts[prompt];
    inv.max_tokens = tokens;
    inv.log_prefix = options.out_dir / "runs" / (slug(inv.arm) + "-" + tag + "-p" + std::to_string(prompt + 1));
    return inv;
  };
  auto progress = [&](const std::string& line) {
    if (options.progress) std::cerr << "\r\033[K" << line << std::flush;
  };

  // Warm-up: one short unmeasured run per arm, so the first measured arm does not also pay for a
  // cold page cache and cold binary.
  if (spec.warmup_tokens > 0) {
    for (uint32_t a = 0; a < spec.arms.size(); ++a) {
      progress("warm-up: arm " + spec.arms[a].name + " (" + std::to_string(spec.warmup_tokens) + " tokens)");
      execute(invocation(a, 0, spec.warmup_tokens, "warmup"));
    }
  }

  const std::vector<ScheduledRun> schedule =
      make_schedule(spec.repetitions, uint32_t(spec.arms.size()), uint32_t(spec.prompts.size()), spec.order, spec.seed);
  result.runs.assign(spec.arms.size(), {});
  for (size_t i = 0; i < schedule.size(); ++i) {
    const ScheduledRun& s = schedule[i];
    // GCC 12 at -O2 and above reports a bogus -Wrestrict overlap inside libstdc++ for a literal
    // plus a std::string; nothing overlaps here.
#if defined(__GNUC__) && !defined(__clang__)  // clang knows no such warning: it would warn of the name
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
    progress("[" + std::to_string(i + 1) + "/" + std::to_string(schedule.size()) + "] repetition " +
             std::to_string(s.repetition + 1) + "/" + std::to_string(spec.repetitions) + ", arm " +
             spec.arms[s.arm].name + ", " + spec.prompts[s.prompt].label + ", " + std::to_string(spec.max_tokens) +
             " tokens");
    Measurement m = execute(invocation(s.arm, s.prompt, spec.max_tokens, "r" + std::to_string(s.repetition + 1)));
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    result.runs[s.arm].push_back({s.repetition, s.prompt, std::move(m)});
  }
  progress("");
  if (options.progress) std::cerr << "\r\033[K";

  // Arm 0's ids per prompt (its first run of that prompt) are the neutrality reference.
  std::vector<std::vector<int32_t>> reference(spec.prompts.size());
  for (const ArmRun& r : result.runs[0]) {
    if (reference[r.prompt].empty()) reference[r.prompt] = r.m.ids;
  }
  result.rows = summarize_arms(result.arms, result.runs, reference);

  TableContext& ctx = result.context;
  ctx.spec = spec.source.string();
  ctx.model = model.string();
  ctx.machine = describe_machine();
  ctx.date = utc_now();
  ctx.command = options.command;
  ctx.repetitions = spec.repetitions;
  ctx.prompts = uint32_t(spec.prompts.size());
  ctx.max_tokens = spec.max_tokens;
  ctx.warmup_tokens = spec.warmup_tokens;
  ctx.order = spec.order == RunOrder::Interleaved ? "interleaved" : "shuffled (seed " + std::to_string(spec.seed) + ")";
  ctx.reloaded_per_repetition = true;
  ctx.pager_stats_available = options.pager_stats_available;

  const std::string markdown = table_markdown(ctx, result.rows);
  write_text(options.out_dir / "table.md", markdown);
  write_text(options.out_dir / "table.csv", table_csv(result.rows));
  write_text(options.out_dir / "table.json", table_json(ctx, result.rows, result.runs));
  write_text(options.out_dir / "plot.svg",
             ablation_svg(result.rows, "moepage ablation: " + spec.source.filename().string()));
  if (options.print_table) std::cout << markdown;
  return result;
}

}  // namespace moepage::ablate
