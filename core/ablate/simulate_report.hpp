// `moepage simulate`: replays a trace through every (policy, slot count) pair with the pager
// core's simulator and lays the miss rates out as a table (Belady-optimal is the floor every
// other policy is measured against) or as JSON.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moepage/pager_core/simulator.hpp"

namespace moepage::ablate {

struct SimulateRequest {
  std::vector<uint32_t> slots;  // slots per layer, each > 0
  std::vector<pager::PolicySpec> policies;
  std::optional<std::pair<uint32_t, uint32_t>> layers;  // inclusive range; nullopt: all
  // POLICY+split splits by this trace's reuse (its same layers kept) instead of the replayed
  // trace's own: an out-of-sample figure. Null: in-sample. Must outlive run_simulation.
  const pager::Trace* split_trace = nullptr;
  // Cells (slot count x policy) replayed at once; each is independent and single-threaded, and
  // the report is the same whatever the count. 0: one per hardware thread.
  uint32_t threads = 0;
};

struct SimulateReport {
  pager::TraceMeta meta;
  uint64_t rows = 0;       // accesses in the selected layers
  uint64_t hint_rows = 0;  // hinted experts in the selected layers (trace v2)
  uint32_t first_layer = 0, last_layer = 0;
  std::vector<pager::SimResult> cells;  // slots-major: cells[s * policies + p]
  std::vector<uint32_t> slots_requested;
  std::vector<pager::PolicySpec> policies;
  std::optional<pager::SimResult> recorded;  // the live pager's outcome, when the trace has it
};

// "8,16,32"; throws std::invalid_argument naming --slots.
std::vector<uint32_t> parse_slot_list(const std::string& text);
// "lru,lfu,lfru,belady" (lfru may carry a half-life: "lfru:32"); throws naming --policies.
std::vector<pager::PolicySpec> parse_policy_list(const std::string& text);
// "3" or "0-7"; throws naming --layers.
std::pair<uint32_t, uint32_t> parse_layer_range(const std::string& text);

// Throws std::invalid_argument when the layer range lies outside the trace, or the split trace
// has another geometry.
SimulateReport run_simulation(const pager::Trace& trace, const SimulateRequest& request);

std::string policy_label(const pager::PolicySpec& p);
std::string simulate_table(const SimulateReport& report, bool per_layer);
// split_trace_name: what --split-trace named ("": none, the split was in-sample).
std::string simulate_json(const SimulateReport& r, const std::string& trace_name,
                          const std::string& split_trace_name = "");

}  // namespace moepage::ablate
