// A profile: which model to run, on which device, with which architecture, pager and transport
// plugins and their options, and how to generate. Profiles are YAML files; `base:` names another
// profile (relative to the including file) whose settings this one starts from, map keys merging
// one by one with the child winning. A key with no value (`budget:` or `budget: ~`) removes what a
// base set. A child that names a different plugin for pager or transport drops the options its
// base gave the old plugin. `--set key.path=value` overrides apply after loading, in order.
//
// Loading checks the shape of the profile (known keys, types of the fixed settings). The pager
// and transport options are only checked against their plugin's option table later
// (option_validation.hpp), once the plugin is found.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace moepage::profile {

// Every problem with a profile: one line naming the file (with line:column where known) or the
// --set override, the key, and what was expected.
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One plugin option exactly as the profile wrote it, with where it came from.
struct OptionSetting {
  std::string name;
  std::string text;                // the scalar as written
  std::filesystem::path base_dir;  // relative PATH options resolve against this folder
  std::string where;               // "file:line:column" or "--set pager.budget=..."
};

// `pager:` or `transport:`: the plugin's name and its options (validated later).
struct ComponentSpec {
  std::string section;  // "pager" or "transport"
  std::string plugin;
  std::string plugin_where;
  std::vector<OptionSetting> options;  // sorted by name
};

struct GenerateSettings {
  std::optional<std::string> prompt;
  std::optional<std::vector<int32_t>> prompt_ids;
  uint32_t max_tokens = 16;
  double temperature = 0.0;  // 0: greedy
  uint32_t top_k = 0;        // 0: no top-k cut
  double top_p = 1.0;        // 1: no nucleus cut
  uint64_t seed = 0;
  bool ignore_eos = false;  // generate max_tokens whatever the model emits (benchmarks, soak runs)
  // Unmeasured prefills of the prompt before the measured one (benchmarks: the first forward of a
  // process pays for loading GPU code and first-touch of memory). Each is followed by a reset, so
  // the output is the same; a pager's residency is what the warm-ups left behind.
  uint32_t warmup_prefills = 0;
  // Where each generate key present was set ("file:line:column" or the command-line flag), so a
  // caller can tell the user's values from defaults (generation_config.json fills the rest).
  std::map<std::string, std::string> where;
};

// `parallel:` expert parallelism: ranks that each own a share of every layer's routed experts,
// each with its own architecture instance, pager and transport (the pager's budget is per rank).
struct ParallelSettings {
  uint32_t ranks = 1;
  // Which rank owns which expert: round_robin (expert e -> rank e mod ranks) or table (read from
  // partition_table, core/parallel/partition_table.hpp).
  std::string partition = "round_robin";
  std::filesystem::path partition_table;  // absolute; set exactly when partition is table
  // How the GPU ranks sum the MoE blocks' partial outputs: nccl (the library, on the devices),
  // host (through host memory and the ranks' own all-reduce), auto (nccl when every rank has its
  // own GPU and the library loads, else host). CPU ranks always sum on the host.
  std::string collective = "auto";
  std::string collective_library;  // dlopen name or path; empty: libnccl.so.2 (librccl.so.1 on AMD)
  std::string ranks_where;         // where ranks was set, for errors that name the key
  std::string table_where;         // where partition_table was set
  std::string collective_where;    // where collective was set
};

struct Profile {
  std::filesystem::path source;                 // the file that was loaded (absolute)
  std::filesystem::path model;                  // absolute; empty when the profile names none
  std::string device = "cpu";                   // cpu | hip
  std::string arch;                             // empty: the best-scoring architecture probe picks
  ComponentSpec arch_spec{"arch", {}, {}, {}};  // `arch: NAME` or `arch: {plugin: NAME, threads: 8, ...}`
  ComponentSpec pager{"pager", {}, {}, {}};
  ComponentSpec transport{"transport", {}, {}, {}};
  GenerateSettings generate;
  ParallelSettings parallel;
  std::string log_level = "info";  // trace | debug | info | warn | error
};

// One command-line override: "key.path=value", the value parsed as a YAML scalar (an empty value
// removes the key). `origin` is how errors name it; empty means "--set <assignment>".
struct Override {
  std::string assignment;
  std::string origin;
};

// Reads `path` and its `base:` chain, applies `overrides` in order, and checks the result.
// `override_base_dir` is where relative paths given by overrides resolve (the working folder).
Profile load_profile(const std::filesystem::path& path, std::span<const Override> overrides,
                     const std::filesystem::path& override_base_dir = std::filesystem::current_path());
// The same with the profile's own text given instead of read from `path` (its `base:` chain is
// still read from disk; messages name `path`). For callers that already hold the text.
Profile load_profile_text(std::string_view text, const std::filesystem::path& path,
                          std::span<const Override> overrides = {},
                          const std::filesystem::path& override_base_dir = std::filesystem::current_path());
// The same with plain "--set" assignments.
Profile load_profile(const std::filesystem::path& path, std::span<const std::string> overrides = {},
                     const std::filesystem::path& override_base_dir = std::filesystem::current_path());

}  // namespace moepage::profile
