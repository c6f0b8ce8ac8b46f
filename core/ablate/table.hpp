// The ablation table: one row per arm, summarizing its measured runs (mean ± sd over the runs
// that reported the quantity, with n), rendered as markdown, CSV and JSON.
//
// ms/token split: the whole generation (prefill + decode) divided by every token it handled,
// split into expert I/O (the pager's read_ns + wait_ns; for a resident pager only wait_ns, as its
// reads happened at load), routed compute (only when the stats report it) and the rest, which is
// whatever remains, so the three parts add up to the total.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ablate/measurement.hpp"
#include "ablate/statistics.hpp"

namespace moepage::ablate {

// What the runner knows about an arm before running it (from its resolved profile).
struct ArmInfo {
  std::string name;
  std::string pager;               // the pager plugin
  std::string transport;           // the transport plugin
  std::string series;              // the plot's series: the pager, plus its policy when not lru
  std::optional<uint64_t> budget;  // pager.budget in bytes; nullopt: none or `auto`
  std::string budget_text;         // as written ("" when none)
};

struct ArmRun {
  uint32_t repetition = 0;
  uint32_t prompt = 0;
  Measurement m;
};

struct ArmRow {
  ArmInfo info;
  uint32_t runs = 0;
  Summary prefill_tok_s, decode_tok_s;
  Summary ms_per_token;  // whole generation / all tokens
  Summary expert_io_ms, routed_ms, rest_ms;
  Summary hit_rate;  // 0..1
  Summary bytes_per_token;
  Summary prefetch_used, prefetch_wasted;
  Summary load_seconds;
  bool load_is_estimate = false;
  Summary peak_mib;
  std::optional<bool> ids_match_arm0;  // nullopt: no run of arm 0 for the same prompt
};

// `runs[a]` are arm a's runs; `reference` is arm 0's ids per prompt (empty when arm 0 has no run
// for that prompt).
std::vector<ArmRow> summarize_arms(const std::vector<ArmInfo>& arms, const std::vector<std::vector<ArmRun>>& runs,
                                   const std::vector<std::vector<int32_t>>& reference);

struct TableContext {
  std::string spec;     // the spec file
  std::string model;    // the model folder
  std::string machine;  // "x86_64, 2 cores, <cpu model>"
  std::string date;     // UTC, ISO 8601
  std::string command;
  uint32_t repetitions = 0;
  uint32_t prompts = 0;
  uint32_t max_tokens = 0;
  uint32_t warmup_tokens = 0;
  std::string order;
  bool reloaded_per_repetition = true;
  bool pager_stats_available = false;
};

std::string table_markdown(const TableContext& ctx, const std::vector<ArmRow>& rows);
std::string table_csv(const std::vector<ArmRow>& rows);
std::string table_json(const TableContext& ctx, const std::vector<ArmRow>& rows,
                       const std::vector<std::vector<ArmRun>>& runs);

}  // namespace moepage::ablate
