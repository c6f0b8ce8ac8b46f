// `moepage run`: loads a profile (plus --set and the shortcut flags), checks the pager's and
// transport's options against their plugins, builds arch -> transport -> pager, and generates.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/generate.hpp"
#include "cli/generation_config.hpp"
#include "cli/interrupt.hpp"
#include "cli/plugin_stack_loading.hpp"
#include "cli/rank_stacks.hpp"
#include "cli/run_stats.hpp"
#include "host/host_api.hpp"
#include "host/log.hpp"
#include "host/plugin_stack.hpp"
#include "host/registry.hpp"
#include "output/npy.hpp"
#include "output/output_file.hpp"
#include "output/output_paths.hpp"
#include "profile/profile.hpp"
#include "profile/yaml_quote.hpp"
#include "tokenizer/tokenizer.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;
namespace {

// The prompt as token ids: prompt_ids as given, or the text through the model's tokenizer.json.
std::vector<int32_t> prompt_ids(const profile::Profile& p, const std::optional<tokenizer::Tokenizer>& tok) {
  if (p.generate.prompt_ids) return *p.generate.prompt_ids;
  if (!p.generate.prompt) {
    throw std::runtime_error(p.source.string() +
                             ": no prompt: set generate.prompt or generate.prompt_ids, or pass "
                             "--prompt-ids");
  }
  if (!tok) {
    throw std::runtime_error("generate.prompt is text but " + (p.model / "tokenizer.json").string() +
                             " does not exist; give token ids with generate.prompt_ids or --prompt-ids");
  }
  return tok->encode(*p.generate.prompt, /*add_special_tokens=*/true);
}

// The profile used without --profile: default.yaml in share/moepage/configs beside the binary's
// bin/ folder (the build tree and an installed tree have the same layout).
fs::path default_profile_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path path = exe.parent_path().parent_path() / "share" / "moepage" / "configs" / "default.yaml";
  if (ec || !fs::is_regular_file(path)) {
    throw UsageError("no --profile given and the default profile " + path.string() +
                     " does not exist; pass --profile P");
  }
  return path;
}

// A float32 .npy of shape [rows, cols], C order (what numpy.load and the golden tests read).
void write_npy_f32(const std::string& path, const std::vector<float>& data, uint32_t cols) {
  const size_t rows = cols ? data.size() / cols : 0;
  output::OutputFile out(path, "--dump-logits");
  out.write(output::npy_preamble(output::npy_f32_matrix_dict(rows, cols)));
  out.write(std::string_view(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
  out.commit();
}

CommandSpec run_spec() {
  CommandSpec spec;
  spec.usage =
      "moepage run [--profile P] [--model DIR] [--set key.path=value]... [--plugin-dir DIR]... "
      "[--prompt TEXT | --prompt-ids 1,2,3] [--max-tokens N] [--ranks N]";
  spec.summary =
      "Loads profile P (with its base: chain; the default profile without --profile), applies each --set in\n"
      "order and then --model, --prompt-ids and --max-tokens, fills the sampling settings nobody set from the\n"
      "model's generation_config.json, validates the pager's and transport's options against their plugins,\n"
      "creates the architecture, the transport and the pager, and generates tokens. Generated ids (and text,\n"
      "when the model has a tokenizer.json) go to stdout; logs go to stderr. SIGINT or SIGTERM finishes the\n"
      "token being computed, writes the trace and statistics, and exits 130 or 143.";
  spec.options.add_options()("profile,p", po::value<std::string>()->value_name("P"),
                             "the YAML profile to run (default: the default profile)")(
      "model", po::value<std::string>()->value_name("DIR"), "the checkpoint folder (overrides model:)")(
      "set", po::value<std::vector<std::string>>()->composing()->value_name("K=V"),
      "override one profile key, e.g. pager.budget=8GiB (repeatable; an empty value removes the key)")(
      "plugin-dir", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "a folder to search for plugins first (repeatable)")("prompt-ids", po::value<std::string>()->value_name("IDS"),
                                                           "prompt token ids, comma separated")(
      "prompt", po::value<std::string>()->value_name("TEXT"),
      "prompt text, encoded with the model's tokenizer.json (replaces the profile's prompt_ids)")(
      "dump-logits", po::value<std::string>()->value_name("F.npy"),
      "write float32 [P + N - 1, vocab] logits: row t = logits at position t (prompt, then fed-back tokens)")(
      "max-tokens", po::value<std::string>()->value_name("N"), "tokens to generate (overrides generate.max_tokens)")(
      "ranks", po::value<std::string>()->value_name("N"),
      "expert-parallel ranks, threads of this process, each with its own pager over its share of the experts "
      "and, on device hip, rank r on GPU r mod the GPUs visible (overrides parallel.ranks; the pager budget is "
      "per rank)")("stats-json", po::value<std::string>()->value_name("FILE"),
                   "write the pager's statistics (and per layer) as JSON")(
      "trace", po::value<std::string>()->value_name("FILE"),
      "write one row per expert access (moepage simulate reads it)");
  return spec;
}

// Each --set, then the shortcut flags as overrides too, named as the user typed them in errors.
std::vector<profile::Override> run_overrides(const po::variables_map& vm) {
  std::vector<profile::Override> overrides;
  for (const std::string& assignment : strings_of(vm, "set")) overrides.push_back({assignment, ""});
  auto shortcut = [&](const char* flag, const char* key) {
    if (!vm.count(flag)) return;
    const std::string value = vm[flag].as<std::string>();
    overrides.push_back({std::string(key) + "=" + profile::yaml_quote(value), "--" + std::string(flag) + " " + value});
  };
  shortcut("model", "model");
  if (vm.count("prompt") && vm.count("prompt-ids")) throw UsageError("--prompt and --prompt-ids both given; pass one");
  shortcut("prompt-ids", "generate.prompt_ids");
  if (vm.count("prompt")) {
    // Text wins over the ids a base profile may carry: drop them, then set the text.
    overrides.push_back({"generate.prompt_ids=", "--prompt"});
    shortcut("prompt", "generate.prompt");
  }
  shortcut("max-tokens", "generate.max_tokens");
  shortcut("ranks", "parallel.ranks");
  return overrides;
}

// Values the user wrote (a profile of theirs, --set, the flags) win over generation_config.json;
// the default profile's values are defaults like the model's.
void fill_generation_defaults(profile::Profile& prof, bool default_profile, spdlog::logger& log) {
  const auto user_set = [&](const std::string& key) {
    const auto it = prof.generate.where.find(key);
    return it != prof.generate.where.end() && !(default_profile && it->second.rfind(prof.source.string(), 0) == 0);
  };
  for (const std::string& key : apply_generation_config(prof.model, prof.generate, user_set))
    log.info("generate.{} from {}", key, (prof.model / "generation_config.json").string());
}

// Outputs are checked before anything loads: a long run must not end by failing to write them,
// nor by overwriting the model or the profile it read.
void check_run_outputs(const po::variables_map& vm, const profile::Profile& prof) {
  std::vector<output::NamedPath> outputs, inputs = output::files_in(prof.model, "the model's");
  inputs.push_back({"the profile", prof.source});
  for (const char* flag : {"dump-logits", "stats-json", "trace"})
    if (vm.count(flag)) outputs.push_back({"--" + std::string(flag), vm[flag].as<std::string>()});
  output::check_output_paths(outputs, inputs);
}

// Generates with SIGINT/SIGTERM finishing the current token; text goes to stdout as it comes.
// Returns the ids and the signal that stopped the run (0: none).
std::pair<std::vector<int32_t>, int> generate_interruptible(Forward& arch, const mp_model_info& info,
                                                            const std::vector<int32_t>& prompt,
                                                            const profile::Profile& prof,
                                                            std::optional<tokenizer::StreamDecoder>& text,
                                                            GenerationTimes& times, std::vector<float>* dumped) {
  LogitsSink sink;
  if (dumped != nullptr)
    sink = [&](const float* rows, uint32_t n) {
      dumped->insert(dumped->end(), rows, rows + size_t(n) * info.vocab_size);
    };
  std::optional<InterruptGuard> interrupt(std::in_place);
  std::vector<int32_t> generated = generate(
      arch, info, prompt, prof.generate,
      [&](int32_t id) {
        if (!text) return true;
        std::cout << text->push(id) << std::flush;
        output::check_stdout();  // a full disk or a closed terminal ends the run now, not at the end
        return true;
      },
      times, sink, [] { return InterruptGuard::received() != 0; });
  const int signal = InterruptGuard::received();
  interrupt.reset();  // from here a signal acts as usual
  return {std::move(generated), signal};
}

void print_generated(std::optional<tokenizer::StreamDecoder>& text, const std::vector<int32_t>& generated) {
  if (text) std::cout << text->finish() << "\n";
  std::cout << "token ids:";
  for (int32_t id : generated) std::cout << " " << id;
  std::cout << "\n";
  output::check_stdout();
}

void log_speed(spdlog::logger& log, size_t prompt_tokens, const GenerationTimes& times) {
  const double prefill_tps = times.prefill_seconds > 0 ? double(prompt_tokens) / times.prefill_seconds : 0.0;
  const double decode_tps = times.decode_seconds > 0 ? double(times.decoded) / times.decode_seconds : 0.0;
  log.info("prefill {} tokens in {:.3f} s ({:.1f} tok/s); decode {} tokens in {:.3f} s ({:.2f} tok/s)", prompt_tokens,
           times.prefill_seconds, prefill_tps, times.decoded, times.decode_seconds, decode_tps);
}

// What the generation runs on: one architecture, or a group of ranks (parallel.ranks).
struct RunTarget {
  Forward& forward;
  mp_model_info info;
  std::vector<mp::PagerHandle*> pagers;  // one per rank
  uint32_t n_layers = 0;
  double load_seconds = 0;
  std::function<std::optional<mp_arch_stats>()> arch_stats;
};

// --stats-json: the pagers' statistics, the run's times and, when the architecture timed them,
// the routed experts' compute time (of the slowest rank).
void write_run_stats(const std::string& path, const RunTarget& target, const GenerationTimes& times,
                     size_t prompt_tokens, size_t generated_tokens) {
  RunTimes run_times{times.prefill_seconds,   times.decode_seconds,       target.load_seconds,
                     uint32_t(prompt_tokens), uint32_t(generated_tokens), std::nullopt};
  if (const auto arch_stats = target.arch_stats()) {
    if (arch_stats->routed_timed) run_times.routed_compute_seconds = double(arch_stats->routed_ns) / 1e9;
    run_times.collective_calls = arch_stats->collective_calls;
    run_times.collective_seconds = double(arch_stats->collective_ns) / 1e9;
    run_times.slot_lookups = arch_stats->slot_lookups;
    run_times.slot_stalls = arch_stats->slot_stalls;
  }
  write_stats_json(path, target.pagers, target.n_layers, run_times);
}

void log_pager_stats(spdlog::logger& log, const RunTarget& target) {
  // Whether decode found its experts on the device (arch option slot_table): only a lookup that
  // missed waited for the host.
  if (const auto arch = target.arch_stats(); arch && arch->slot_lookups > 0)
    log.info("slot table: {} layer steps looked their experts up on the device, {} of them waited for the host",
             arch->slot_lookups, arch->slot_stalls);
  std::vector<mp_pager_stats> stats;
  for (mp::PagerHandle* p : target.pagers) stats.push_back(p->stats());
  if (stats.size() == 1) return log.info("{}", format_pager_stats(stats[0]));
  for (size_t r = 0; r < stats.size(); ++r) log.info("rank {}: {}", r, format_pager_stats(stats[r]));
  log.info("all {} ranks: {}", stats.size(), format_pager_stats(merge_pager_stats(stats)));
}

// Generates and writes every output; returns the exit status.
int generate_and_report(const po::variables_map& vm, const profile::Profile& prof, const RunTarget& target,
                        const std::optional<tokenizer::Tokenizer>& tok, const std::vector<int32_t>& prompt,
                        spdlog::logger& log) {
  std::optional<tokenizer::StreamDecoder> text;
  if (tok) text.emplace(*tok);
  GenerationTimes times;
  std::vector<float> dumped;  // rows for --dump-logits
  const auto [generated, signal] = generate_interruptible(target.forward, target.info, prompt, prof, text, times,
                                                          vm.count("dump-logits") ? &dumped : nullptr);
  if (signal != 0) log.warn("interrupted by signal {} after {} tokens; writing the outputs", signal, generated.size());
  if (vm.count("dump-logits")) write_npy_f32(vm["dump-logits"].as<std::string>(), dumped, target.info.vocab_size);
  print_generated(text, generated);
  log_speed(log, prompt.size(), times);
  log_pager_stats(log, target);
  if (vm.count("stats-json"))
    write_run_stats(vm["stats-json"].as<std::string>(), target, times, prompt.size(), generated.size());
  return signal != 0 ? 128 + signal : kExitOk;
}

// parallel.ranks > 1: the ranks' stacks, then the same generation as one rank's.
int run_ranks(const po::variables_map& vm, const profile::Profile& prof, ResolvedStack& resolved,
              const mp_host_api* host, const std::optional<tokenizer::Tokenizer>& tok,
              const std::vector<int32_t>& prompt, spdlog::logger& log) {
  const std::string key = ranks_key(prof.parallel);
  if (vm.count("trace"))
    throw UsageError("--trace records one pager and does not run with " + key + " = " +
                     std::to_string(prof.parallel.ranks) + " yet; trace a one-rank run");
  const RankDevices devices(prof, host);
  RankStacks ranks(resolved, devices, prof.parallel, key);
  log.info(
      "{} expert-parallel ranks as threads of this process, experts {}; each rank has its own pager and "
      "transport (the pager options, budget included, apply per rank); {}",
      ranks.ranks(),
      prof.parallel.partition == "table" ? "from " + prof.parallel.partition_table.string() : "round-robin",
      devices.describe());
  RunTarget target{ranks,
                   ranks.info(),
                   {},
                   ranks.catalog().n_layers,
                   ranks.load_seconds(),
                   [&] { return ranks.slowest_arch_stats(); }};
  for (uint32_t r = 0; r < ranks.ranks(); ++r) target.pagers.push_back(&ranks.pager(r));
  const int status = generate_and_report(vm, prof, target, tok, prompt, log);
  ranks.shutdown();
  return status;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  CommandSpec spec = run_spec();
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;

  const std::vector<profile::Override> overrides = run_overrides(*vm);
  const bool default_profile = !vm->count("profile");
  const fs::path profile_path = default_profile ? default_profile_path() : fs::path((*vm)["profile"].as<std::string>());
  profile::Profile prof = profile::load_profile(profile_path, overrides);
  if (!log_level_set_by_command_line()) {
    host::set_log_level(log_level_from_name(prof.log_level, prof.source.string() + ": log.level"));
  }
  auto log = host::logger("run");
  if (default_profile) log->info("profile {} (the default; --profile picks another)", prof.source.string());

  // First: a profile asking for a device this build or machine lacks fails before anything loads.
  std::unique_ptr<host::DeviceService> device = make_device_service(prof.device, prof.source.string() + ": device");
  require_model_folder(prof);
  fill_generation_defaults(prof, default_profile, *log);
  check_run_outputs(*vm, prof);

  host::HostApi host(std::move(device));
  host::Registry registry(host.get());
  registry.scan(host::default_discovery_dirs(strings_of(*vm, "plugin-dir")));

  // Everything the profile names is found and validated before anything is created.
  ResolvedStack resolved = resolve_stack(registry, prof);
  const std::string pager_name = resolved.pager.component->name();
  log->info("model {}, arch {}, pager {}, transport {}", prof.model.string(), resolved.arch.component->name(),
            pager_name, resolved.transport.component->name());

  const std::optional<tokenizer::Tokenizer> tok = load_model_tokenizer(prof.model);
  const std::vector<int32_t> prompt = prompt_ids(prof, tok);

  if (prof.parallel.ranks > 1) return run_ranks(*vm, prof, resolved, host.get(), tok, prompt, *log);

  std::optional<TraceWriter> trace;  // before the stack: the architecture calls the pager through it
  LoadedStack loaded =
      create_stack(resolved, host.get(), [&](mp::PagerHandle& pager, const mp_expert_catalog& catalog) {
        if (!vm->count("trace")) return pager.ref();
        trace.emplace((*vm)["trace"].as<std::string>(), catalog.n_layers, catalog.n_experts, catalog.top_k);
        if (!pager.set_trace(&TraceWriter::on_event, &*trace)) log->warn("pager {} writes no traces", pager_name);
        return trace->recording(pager.ref());
      });
  host::PluginStack& stack = loaded.stack;
  ArchForward arch(stack.arch);
  const RunTarget target{arch,
                         loaded.info,
                         {&stack.pager},
                         loaded.catalog->n_layers,
                         loaded.load_seconds,
                         [&] { return stack.arch.stats(); }};
  const int status = generate_and_report(*vm, prof, target, tok, prompt, *log);
  if (trace) {
    stack.pager.set_trace(nullptr, nullptr);
    trace->finish();
  }
  stack.shutdown();
  return status;
}

}  // namespace moepage::cli
