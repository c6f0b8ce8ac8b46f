#include "moepage/pager_core/simulator.hpp"

#include <algorithm>
#include <string>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/pager_core.hpp"
#include "moepage/pager_core/slot_pool.hpp"
#include "moepage/pager_core/split.hpp"

namespace moepage::pager {

using LayerSchedule = TraceReplay::LayerSchedule;

namespace {

// One layer's part of the trace: its access rows cut into chunks, and its hint rows.
// The end of the hint call that starts at hints[h] (its rows have ranks 1, 2, ... after it).
size_t hint_call_end(const Trace& trace, const LayerSchedule& s, size_t h) {
  size_t end = h + 1;
  while (end < s.hints.size() && trace.hints[s.hints[end]].rank != 0) ++end;
  return end;
}

// The end of the chunk that starts at rows[k]; chunk_of[k] is the chunk (one demand) of rows[k].
size_t chunk_end(const std::vector<uint64_t>& chunk_of, size_t k) {
  size_t end = k;
  while (end < chunk_of.size() && chunk_of[end] == chunk_of[k]) ++end;
  return end;
}

// lru, lfu, lfru through a one-layer PagerCore, driven the way the live paged pager drives it.
void replay_live(const Trace& trace, const LayerSchedule& s, const std::vector<uint64_t>& chunk_of, uint32_t slots,
                 const PolicySpec& policy, SimLayerResult& out) {
  CoreGeometry geo;
  geo.n_layers = 1;
  geo.n_experts = trace.meta.experts;
  geo.slots_per_layer = slots;
  geo.policy = policy;
  PagerCore core(std::move(geo));
  std::vector<uint64_t> pending;  // prefetch fills in flight, as the live pager keeps them
  std::vector<int32_t> ids;
  bool started = false;
  uint64_t token = 0;
  auto at_token = [&](uint64_t t) {
    if (started && t == token) return;
    core.begin_token(t);
    token = t;
    started = true;
  };
  auto settle = [&] {
    for (uint64_t fill : pending) core.commit_fill(0, fill);
    pending.clear();
  };
  size_t h = 0;
  for (size_t k = 0; k < s.rows.size();) {
    while (h < s.hints.size() && trace.hints[s.hints[h]].before_row <= s.rows[k]) {
      const size_t end = hint_call_end(trace, s, h);
      const TraceHint& first = trace.hints[s.hints[h]];
      const bool predicted = first.source == HintSource::Predictor;
      if (predicted && !policy.prefetch_predictions) {
        h = end;
        continue;
      }
      ids.clear();
      for (size_t j = h; j < end; ++j) ids.push_back(int32_t(trace.hints[s.hints[j]].expert));
      if (predicted && policy.predict_m > 0 && ids.size() > policy.predict_m) ids.resize(policy.predict_m);
      at_token(first.token);
      if (pending.size() >= kMaxPendingPrefetchesPerLayer) settle();
      const Plan& placed = core.prefetch(0, ids);
      out.prefetch_reads += placed.size();
      if (placed.size() > 0) pending.push_back(placed.fill);
      h = end;
    }
    const size_t end = chunk_end(chunk_of, k);
    ids.clear();
    for (size_t j = k; j < end; ++j) ids.push_back(int32_t(trace.rows[s.rows[j]].expert));
    at_token(trace.rows[s.rows[k]].token);
    settle();
    const Plan& plan = core.plan(0, ids);
    out.misses += plan.misses;
    if (plan.fill != 0) core.commit_fill(0, plan.fill);
    out.accesses += ids.size();
    k = end;
  }
}

// Belady with hints as free just-in-time loads (see simulator.hpp).
void replay_belady(const Trace& trace, uint32_t layer, const LayerSchedule& s, const std::vector<uint64_t>& chunk_of,
                   uint32_t slots, const PolicySpec& policy, SimLayerResult& out) {
  const size_t n = s.rows.size();
  // hinted[k]: the row's expert was hinted since its previous access of this layer.
  std::vector<uint8_t> hinted(n, 0), hinted_since(trace.meta.experts, 0);
  size_t h = 0;
  for (size_t k = 0; k < n; ++k) {
    for (; h < s.hints.size() && trace.hints[s.hints[h]].before_row <= s.rows[k]; ++h)
      if (trace.hints[s.hints[h]].source == HintSource::Arch) hinted_since[trace.hints[s.hints[h]].expert] = 1;
    const uint32_t e = trace.rows[s.rows[k]].expert;
    hinted[k] = hinted_since[e];
    hinted_since[e] = 0;
  }
  // next_use[k]: the chunk of the expert's next costly access; a hinted next access is free.
  std::vector<uint64_t> next_use(n), next_costly(trace.meta.experts, BeladyPolicy::kNever);
  for (size_t k = n; k-- > 0;) {
    const uint32_t e = trace.rows[s.rows[k]].expert;
    next_use[k] = next_costly[e];
    next_costly[e] = hinted[k] ? BeladyPolicy::kNever : chunk_of[k];
  }
  SlotPool pool(layer, 0, 1, slots, trace.meta.experts, policy);
  auto& belady = static_cast<BeladyPolicy&>(pool.policy());
  std::vector<int32_t> experts;
  std::vector<SlotPlan> plans(slots);
  uint64_t last_token = trace.rows[s.rows[0]].token;
  for (size_t k = 0; k < n;) {
    const size_t end = chunk_end(chunk_of, k);
    experts.clear();
    for (size_t j = k; j < end; ++j) {
      const uint32_t e = trace.rows[s.rows[j]].expert;
      experts.push_back(int32_t(e));
      belady.set_next_use(e, next_use[j]);
    }
    const uint64_t token = trace.rows[s.rows[k]].token;
    if (token != last_token) pool.begin_token();
    last_token = token;
    const uint64_t fill = chunk_of[k] + 1;
    pool.demand(experts, fill, std::span<SlotPlan>(plans.data(), experts.size()));
    pool.commit_fill(fill);
    for (size_t j = k; j < end; ++j)
      if (!plans[j - k].hit && !hinted[j]) ++out.misses;
    out.accesses += experts.size();
    k = end;
  }
}

}  // namespace

TraceReplay::TraceReplay(const Trace& trace) : trace_(trace), layers_(trace.meta.layers) {
  // A request is a run of consecutive rows with the same token and layer that no hint row splits
  // (a hint between two accesses means two acquires).
  const size_t n_rows = trace.rows.size();
  std::vector<uint8_t> hint_before(n_rows + 1, 0);
  for (size_t i = 0; i < trace.hints.size(); ++i) {
    const TraceHint& hint = trace.hints[i];
    hint_before[std::min<uint64_t>(hint.before_row, n_rows)] = 1;
    layers_[hint.layer].hints.push_back(uint32_t(i));
  }
  uint64_t id = 0;
  for (size_t i = 0; i < n_rows; ++i) {
    const TraceRow& r = trace.rows[i];
    if (i == 0 || hint_before[i] || r.token != trace.rows[i - 1].token || r.layer != trace.rows[i - 1].layer) ++id;
    layers_[r.layer].rows.push_back(uint32_t(i));
    layers_[r.layer].request.push_back(id);
  }
}

bool TraceReplay::has_rows(uint32_t layer) const { return layer < layers_.size() && !layers_[layer].rows.empty(); }

SimLayerResult TraceReplay::replay(uint32_t layer, uint32_t slots, const PolicySpec& policy,
                                   uint32_t max_request) const {
  if (slots == 0)
    throw PagerError(ErrorKind::InvalidRequest, "simulate: layer " + std::to_string(layer) + " needs at least 1 slot");
  SimLayerResult out;
  if (!has_rows(layer)) return out;  // hints alone change no count
  slots = std::min(slots, trace_.meta.experts);
  const uint32_t chunk_limit = max_request == 0 ? slots : std::min(max_request, slots);
  // Chunk boundaries: a new request, or a full chunk.
  const LayerSchedule& s = layers_[layer];
  std::vector<uint64_t> chunk_of(s.rows.size(), 0);
  uint64_t chunk = 0;
  uint32_t in_chunk = 0;
  for (size_t k = 0; k < s.rows.size(); ++k) {
    if (k > 0 && (s.request[k] != s.request[k - 1] || in_chunk == chunk_limit)) {
      ++chunk;
      in_chunk = 0;
    }
    chunk_of[k] = chunk;
    ++in_chunk;
  }
  if (policy.kind == PolicyKind::Belady) replay_belady(trace_, layer, s, chunk_of, slots, policy, out);
  else replay_live(trace_, s, chunk_of, slots, policy, out);
  return out;
}

SimResult simulate_layers(const Trace& trace, std::span<const uint32_t> layer_slots, const PolicySpec& policy,
                          uint32_t max_request) {
  if (layer_slots.size() != trace.meta.layers)
    throw PagerError(ErrorKind::InvalidRequest, "simulate: " + std::to_string(layer_slots.size()) +
                                                    " slot counts for a trace of " + std::to_string(trace.meta.layers) +
                                                    " layers");
  const TraceReplay replay(trace);
  SimResult result;
  result.policy = policy;
  result.layers.assign(trace.meta.layers, SimLayerResult{});
  result.layer_slots.assign(trace.meta.layers, 0);
  uint32_t max_slots = 0;
  for (uint32_t layer = 0; layer < trace.meta.layers; ++layer) {
    const uint32_t slots = std::min(layer_slots[layer], trace.meta.experts);
    result.layer_slots[layer] = slots;
    max_slots = std::max(max_slots, slots);
    if (!replay.has_rows(layer)) continue;
    SimLayerResult& out = result.layers[layer];
    out = replay.replay(layer, slots, policy, max_request);
    result.accesses += out.accesses;
    result.misses += out.misses;
    result.prefetch_reads += out.prefetch_reads;
  }
  result.slots = max_slots;
  return result;
}

SimResult simulate(const Trace& trace, uint32_t slots_per_layer, const PolicySpec& policy, const Trace* split_source) {
  if (slots_per_layer == 0) throw PagerError(ErrorKind::InvalidRequest, "simulate: slots per layer must be at least 1");
  const Trace& source = split_source ? *split_source : trace;
  if (source.meta.layers != trace.meta.layers || source.meta.experts != trace.meta.experts)
    throw PagerError(ErrorKind::InvalidRequest, "simulate: the split trace has " + std::to_string(source.meta.layers) +
                                                    " layers x " + std::to_string(source.meta.experts) +
                                                    " experts, the trace " + std::to_string(trace.meta.layers) + " x " +
                                                    std::to_string(trace.meta.experts));
  const uint32_t slots = std::min(slots_per_layer, trace.meta.experts);
  std::vector<uint32_t> layer_slots(trace.meta.layers, slots);
  uint32_t max_request = 0;
  if (policy.split_by_trace) {
    // The same total the uniform pools hold, split by each layer's simulated reuse (split.hpp).
    std::vector<uint8_t> accessed(trace.meta.layers, 0);
    for (const TraceRow& r : source.rows) accessed[r.layer] = 1;
    uint64_t n_accessed = 0;
    for (uint8_t a : accessed) n_accessed += a;
    SplitRequest request;
    request.total_slots = uint64_t(slots) * n_accessed;
    request.layers = std::move(accessed);
    request.min_slots = std::min(std::max(trace.meta.top_k, 1u), slots);
    request.policy = policy;
    request.policy.split_by_trace = false;
    request.objective = policy.split_objective;
    layer_slots = split_slots_by_reuse(source, request).slots;
    // A live pager serves requests of at most its smallest layer's slots (stats report that, and
    // the architecture cuts prefill bands to it), so requests are chunked at that size everywhere.
    max_request = slots;
    for (uint32_t l = 0; l < trace.meta.layers; ++l)
      if (request.layers[l]) max_request = std::min(max_request, layer_slots[l]);
    for (uint32_t& s : layer_slots) s = std::max(s, 1u);  // layers without accesses: any count will do
  }
  SimResult result = simulate_layers(trace, layer_slots, policy, max_request);
  result.slots = slots;
  return result;
}

SimResult simulate(const Trace& trace, uint32_t slots_per_layer, const PolicySpec& policy) {
  return simulate(trace, slots_per_layer, policy, nullptr);
}

SimResult recorded_result(const Trace& trace) {
  if (!trace.has_outcomes) throw PagerError(ErrorKind::InvalidRequest, "recorded_result: the trace has no hit column");
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
