// An ablation spec: which arms to compare, on which model, with which prompts, how often and in
// which order. Read from YAML (see configs/ablations/demo.yaml for a commented example):
//
//   base: ../default.yaml            profile every arm starts from (relative to the spec)
//   model: ../../models/ds4-debian-tiny        a checkpoint folder (relative to the spec), or
//   model: {synth: {preset: small, seed: 1, experts: 64, layers: 4, expert_dtype: fp4}}
//                                    synthesized into <out>/model before the first run
//   arms:                            the first arm is the reference for ids==arm0
//     - {name: resident, set: {pager.plugin: resident}}
//     - {name: lru-8MiB, set: {pager.plugin: lru, pager.budget: 8MiB}}
//     - {name: mine, profile: ../lru.yaml, set: {...}}   another profile (+ optional overrides)
//   repetitions: 3
//   warmup_tokens: 4                 one unmeasured run per arm with this many tokens first (0: none)
//   prompts: [{ids: [1, 2, 3]}, {ids_file: p.txt}, {text: "Hello"}]
//   max_tokens: 32
//   order: interleaved | shuffled    ABAB... per repetition, or a seeded shuffle per repetition
//   seed: 0
//   random_adapter: {rank: 16, seed: 1}   writes <out>/adapter.hfadpt for the model (for
//                                    adapter-prefetch arms: set: {pager.adapter: "${adapter}"})
//
// Set values may use ${model} (the model folder), ${out} (the output folder) and ${adapter}.
//
// Every error is a SpecError: one line naming the spec file, the key and what was expected.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace moepage::ablate {

class SpecError : public std::runtime_error {
 public:
  // One line, whatever the spec's strings (or the YAML parser's message) hold: control bytes
  // become '?'.
  explicit SpecError(std::string message) : std::runtime_error(one_line(std::move(message))) {}

 private:
  static std::string one_line(std::string m) {
    for (char& c : m)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return m;
  }
};

struct SynthModel {
  std::string preset = "small";
  uint64_t seed = 0;
  std::optional<uint32_t> experts;
  std::optional<uint32_t> layers;
  std::optional<std::string> expert_dtype;  // fp4 | fp8 | bf16
};

struct ModelChoice {
  std::filesystem::path path;  // absolute; empty when synthesized
  std::optional<SynthModel> synth;
};

struct Arm {
  std::string name;
  std::filesystem::path profile;                          // absolute; the spec's base when not given
  std::vector<std::pair<std::string, std::string>> sets;  // key.path, value as YAML text (in order)
};

struct Prompt {
  std::string label;  // "prompt 1", or the ids file name
  std::optional<std::vector<int32_t>> ids;
  std::optional<std::string> text;
};

enum class RunOrder { Interleaved, Shuffled };

struct RandomAdapter {
  uint32_t rank = 16;
  uint64_t seed = 1;
};

struct Spec {
  std::filesystem::path source;  // absolute path of the spec file
  std::filesystem::path base;    // absolute
  ModelChoice model;
  std::vector<Arm> arms;
  uint32_t repetitions = 3;
  uint32_t warmup_tokens = 0;
  std::vector<Prompt> prompts;
  uint32_t max_tokens = 16;
  RunOrder order = RunOrder::Interleaved;
  uint64_t seed = 0;
  std::optional<RandomAdapter> random_adapter;
};

// Parses YAML text; `source` names the file in errors and anchors relative paths (its folder).
// Files the spec refers to (base, arm profiles, ids files) must exist.
Spec parse_spec(const std::string& yaml_text, const std::filesystem::path& source);
Spec load_spec(const std::filesystem::path& path);

// Token ids written as "1, 2 3\n4" (commas and/or whitespace); throws SpecError naming `where`.
std::vector<int32_t> parse_id_list(const std::string& text, const std::string& where);

}  // namespace moepage::ablate
