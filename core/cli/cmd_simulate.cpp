// `moepage simulate TRACE`: replays a recorded expert trace through eviction policies at several
// slot counts and prints the miss rates, Belady-optimal as the floor (see core/ablate).
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "ablate/simulate_report.hpp"
#include "ablate/trace_input.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "output/output_file.hpp"
#include "output/output_paths.hpp"

namespace moepage::cli {
namespace po = boost::program_options;

int cmd_simulate(int argc, char** argv) {
  CommandSpec spec;
  spec.usage =
      "moepage simulate TRACE --slots N[,N...] [--policies lru,lfu,lfru,belady] [--layers A-B] "
      "[--split-trace FILE] [--threads N] [--per-layer] [--json FILE]";
  spec.summary =
      "Replays TRACE (written by `moepage run --trace`, or a v4 trace of tools/train; plain text or .xz) per\n"
      "layer through each policy at each slot count, with the same slot pools and policies the live pagers use,\n"
      "and prints the miss rates. Belady (evict the expert used furthest in the future) needs the future, so it\n"
      "exists only here: it is the floor no policy can beat. Hints (v2+ hint rows, v4 'h' lines: what the\n"
      "architecture hinted to the live pager) are replayed: lru, lfu and lfru prefetch them as the live pager\n"
      "did, belady takes them as free loads. lfru takes a half-life in pool events as lfru:H (default 4 x slots).\n"
      "Predictions (v3 predict rows, v4 'p' lines: what a pager's predictor proposed) are replayed only by\n"
      "POLICY+prefetch[:M]. POLICY+split shares the same total slots (slots x layers) out per layer by each\n"
      "layer's simulated reuse in this trace, as pager.split = trace does with its split_trace, so that the\n"
      "fewest experts are read; POLICY+split:misses, the fewest misses (pager.split_objective). The trace is its\n"
      "own split trace (an in-sample figure) unless --split-trace names another recording of the same geometry\n"
      "(an out-of-sample one). A second table gives the expert reads per access, prefetches included, and how\n"
      "much of lru's excess misses over belady each policy removes.";
  spec.options.add_options()("trace", po::value<std::string>()->required()->value_name("TRACE"), "the trace file")(
      "slots", po::value<std::string>()->required()->value_name("N,..."), "slots per layer, comma separated")(
      "policies", po::value<std::string>()->default_value("lru,lfu,lfru,belady")->value_name("P,..."),
      "policies to replay: lru, lfu, lfru[:H], s3fifo, belady; POLICY+prefetch[:M] also prefetches the trace's "
      "predictions (v3 predict rows or v4 'p' lines, at most M per proposal) as the adapter-prefetch pager does; "
      "POLICY+split[:reads|misses] splits the slots per layer by the trace's reuse (pager.split = trace)")(
      "layers", po::value<std::string>()->value_name("A-B"), "only these layers (inclusive)")(
      "split-trace", po::value<std::string>()->value_name("FILE"),
      "POLICY+split splits by this trace's reuse instead of TRACE's own (same layers and experts)")(
      "threads", po::value<uint32_t>()->default_value(0)->value_name("N"),
      "cells (slot count x policy) replayed at once, one per thread; 0: one per hardware thread")(
      "per-layer", po::bool_switch(), "also print a miss-rate table per layer")(
      "json", po::value<std::string>()->value_name("FILE"), "also write the results as JSON");
  spec.positional.add("trace", 1);
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;

  ablate::SimulateRequest request;
  try {
    request.slots = ablate::parse_slot_list((*vm)["slots"].as<std::string>());
    request.policies = ablate::parse_policy_list((*vm)["policies"].as<std::string>());
    if (vm->count("layers")) request.layers = ablate::parse_layer_range((*vm)["layers"].as<std::string>());
    request.threads = (*vm)["threads"].as<uint32_t>();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const std::string trace_path = (*vm)["trace"].as<std::string>();
  const std::optional<std::string> split_path =
      vm->count("split-trace") ? std::optional((*vm)["split-trace"].as<std::string>()) : std::nullopt;
  if (vm->count("json")) {
    std::vector<output::NamedPath> inputs{{"the trace", trace_path}};
    if (split_path) inputs.push_back({"--split-trace", *split_path});
    output::check_output_paths({{"--json", (*vm)["json"].as<std::string>()}}, inputs);
  }
  const pager::Trace trace = ablate::load_trace(trace_path);
  std::optional<pager::Trace> split_trace;
  if (split_path) {
    split_trace = ablate::load_trace(*split_path);
    request.split_trace = &*split_trace;
  }
  ablate::SimulateReport report;
  try {
    report = ablate::run_simulation(trace, request);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::cout << ablate::simulate_table(report, (*vm)["per-layer"].as<bool>());
  if (vm->count("json")) {
    output::write_file((*vm)["json"].as<std::string>(),
                       ablate::simulate_json(report, trace_path, split_path.value_or("")), "--json");
  }
  return kExitOk;
}

}  // namespace moepage::cli
