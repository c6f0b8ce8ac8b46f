#include "moepage/pager_core/simulator.hpp"

#include <algorithm>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/slot_pool.hpp"

namespace moepage::pager {

SimResult simulate(const Trace& trace, uint32_t slots_per_layer, const PolicySpec& policy) {
  if (slots_per_layer == 0) throw PagerError(ErrorKind::InvalidRequest, "simulate: slots per layer must be at least 1");
  const uint32_t slots = std::min(slots_per_layer, trace.meta.experts);
  SimResult result;
  result.policy = policy;
  result.slots = slots;
  result.layers.assign(trace.meta.layers, SimLayerResult{});

  // Global request id of every row (consecutive rows with the same token and layer), and the
  // rows of each layer in trace order.
  const size_t n_rows = trace.rows.size();
  std::vector<uint64_t> request(n_rows);
  std::vector<std::vector<uint32_t>> layer_rows(trace.meta.layers);
  uint64_t id = 0;
  for (size_t i = 0; i < n_rows; ++i) {
    const TraceRow& r = trace.rows[i];
    if (i == 0 || r.token != trace.rows[i - 1].token || r.layer != trace.rows[i - 1].layer) ++id;
    request[i] = id;
    layer_rows[r.layer].push_back(uint32_t(i));
  }

  std::vector<uint64_t> chunk_of;     // per row of the layer: its chunk index
  std::vector<uint64_t> next_use;     // per row of the layer: the next chunk using its expert
  std::vector<uint64_t> last_seen(trace.meta.experts);
  std::vector<int32_t> experts;
  std::vector<SlotPlan> plans(slots);
  experts.reserve(slots);
  for (uint32_t layer = 0; layer < trace.meta.layers; ++layer) {
    const std::vector<uint32_t>& rows = layer_rows[layer];
    if (rows.empty()) continue;
    // Chunk boundaries: a new request, or a full chunk.
    chunk_of.assign(rows.size(), 0);
    uint64_t chunk = 0;
    uint32_t in_chunk = 0;
    for (size_t k = 0; k < rows.size(); ++k) {
      if (k > 0 && (request[rows[k]] != request[rows[k - 1]] || in_chunk == slots)) {
        ++chunk;
        in_chunk = 0;
      }
      chunk_of[k] = chunk;
      ++in_chunk;
    }
    if (policy.kind == PolicyKind::Belady) {
      next_use.assign(rows.size(), BeladyPolicy::kNever);
      std::fill(last_seen.begin(), last_seen.end(), BeladyPolicy::kNever);
      for (size_t k = rows.size(); k-- > 0;) {
        const uint32_t e = trace.rows[rows[k]].expert;
        next_use[k] = last_seen[e];
        last_seen[e] = chunk_of[k];
      }
    }
    SlotPool pool(layer, 0, 1, slots, trace.meta.experts, policy);
    BeladyPolicy* belady = policy.kind == PolicyKind::Belady ? static_cast<BeladyPolicy*>(&pool.policy()) : nullptr;
    SimLayerResult& out = result.layers[layer];
    uint64_t last_token = trace.rows[rows[0]].token;
    for (size_t k = 0; k < rows.size();) {
      size_t end = k;
      while (end < rows.size() && chunk_of[end] == chunk_of[k]) ++end;
      experts.clear();
      for (size_t j = k; j < end; ++j) {
        const uint32_t e = trace.rows[rows[j]].expert;
        experts.push_back(int32_t(e));
        if (belady) belady->set_next_use(e, next_use[j]);
      }
      const uint64_t token = trace.rows[rows[k]].token;
      if (token != last_token) pool.begin_token();
      last_token = token;
      const uint64_t fill = chunk_of[k] + 1;
      out.misses += pool.demand(experts, fill, std::span<SlotPlan>(plans.data(), experts.size()));
      pool.commit_fill(fill);
      out.accesses += experts.size();
      k = end;
    }
    result.accesses += out.accesses;
    result.misses += out.misses;
  }
  return result;
}

SimResult recorded_result(const Trace& trace) {
  if (!trace.has_outcomes)
    throw PagerError(ErrorKind::InvalidRequest, "recorded_result: the trace has no hit column");
  SimResult result;
  result.layers.assign(trace.meta.layers, SimLayerResult{});
  for (const TraceRow& r : trace.rows) {
    ++result.layers[r.layer].accesses;
    if (!r.hit) ++result.layers[r.layer].misses;
  }
  for (const auto& l : result.layers) {
    result.accesses += l.accesses;
    result.misses += l.misses;
  }
  return result;
}

}  // namespace moepage::pager
