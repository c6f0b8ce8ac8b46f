// The subcommands of `moepage`. Adding one is one line in MOEPAGE_CLI_COMMANDS plus a file
// cmd_<name>.cpp defining `int cmd_<name>(int argc, char** argv)` (argv[0] is the command name;
// CMake picks up every cmd_*.cpp; cmd_serve.cpp lives in core/serve, a library of its own). A
// command returns an exit code or throws: UsageError and Boost.Program_options errors exit 2,
// anything else exits 1 with one "moepage: error:" line.
#pragma once
#include <span>
#include <string_view>

#define MOEPAGE_CLI_COMMANDS(X)                                                                   \
  X(ablate, "run A/B arms of profiles over repetitions; write tables and a plot")                 \
  X(adapter, "write a random HFADPT expert-prediction adapter (for tests)")                       \
  X(conform, "run the conformance suite on a transport or pager plugin library")                  \
  X(inspect, "show a checkpoint: the architecture's summary, tensors, what a budget buys")        \
  X(plugins, "list the plugins found, their components, options and refusals")                    \
  X(run, "load a profile, build arch, transport and pager, and generate tokens")                  \
  X(serve, "serve a profile over OpenAI-compatible HTTP (completions, chat, streaming, metrics)") \
  X(synth, "write a synthetic checkpoint through an architecture plugin (any geometry, seeded)")  \
  X(simulate, "replay an expert trace through eviction policies (Belady as the floor)")

namespace moepage::cli {

#define MOEPAGE_CLI_DECLARE(name, summary) int cmd_##name(int argc, char** argv);
MOEPAGE_CLI_COMMANDS(MOEPAGE_CLI_DECLARE)
#undef MOEPAGE_CLI_DECLARE

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(int argc, char** argv);
};

#define MOEPAGE_CLI_ENTRY(name, summary) Command{#name, summary, &cmd_##name},
inline constexpr Command kCommands[] = {MOEPAGE_CLI_COMMANDS(MOEPAGE_CLI_ENTRY)};
#undef MOEPAGE_CLI_ENTRY

}  // namespace moepage::cli
