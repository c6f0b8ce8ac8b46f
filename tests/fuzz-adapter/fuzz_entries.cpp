#include "fuzz_entries.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moepage/pager_core/adapter_file.hpp"
#include "moepage/pager_core/adapter_scorer.hpp"
#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/simulator.hpp"
#include "moepage/pager_core/trace.hpp"

namespace moepage::fuzz {

using namespace moepage::pager;

AdapterModel adapter_model() { return {.n_layers = 5, .d_model = 6, .n_experts = 4, .has_experts = {0, 0, 1, 1, 1}}; }

void adapter_input(const uint8_t* data, size_t size) {
  const AdapterModel model = adapter_model();
  Adapter adapter;
  try {
    adapter = parse_adapter(std::span<const uint8_t>(data, size), model, "fuzz.hfadpt");
  } catch (const PagerError&) {
    return;
  }
  // A valid adapter must round-trip byte for byte and score without trouble.
  const std::vector<uint8_t> again = serialize_adapter(adapter);
  if (again.size() != size || !std::equal(again.begin(), again.end(), data)) __builtin_trap();
  AdapterScorer scorer(adapter, model.n_layers);
  const std::vector<float> hidden = {1.0f, -0.5f, 0.25f, 2.0f, 0.0f, -3.0f};
  std::vector<float> scores(model.n_experts);
  std::vector<int32_t> top(3);
  for (const AdapterEntry& e : adapter.entries) {
    scorer.score(e.src_layer, hidden, {}, scores);
    scorer.top_m(scores, 3, top);
  }
}

namespace {

// The trace written back the way a live run writes it (v3 rows, hints before the row they precede).
std::string as_v3(const Trace& trace) {
  TraceMeta meta = trace.meta;
  meta.version = 3;
  std::string text = trace_header(meta);
  char buf[96];
  auto put = [&](size_t n) {
    if (n == 0) __builtin_trap();  // the writers promise 64 bytes suffice
    text.append(buf, n);
  };
  size_t h = 0;
  for (size_t r = 0; r <= trace.rows.size(); ++r) {
    for (; h < trace.hints.size() && trace.hints[h].before_row <= r; ++h) put(format_trace_hint(trace.hints[h], buf));
    if (r < trace.rows.size()) put(format_trace_row(trace.rows[r], trace.has_outcomes, buf));
  }
  return text;
}

}  // namespace

void trace_input(const uint8_t* data, size_t size) {
  Trace trace;
  try {
    trace = parse_trace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.trace");
  } catch (const PagerError&) {
    return;
  }
  // Every version describes its events as v3 rows would: written as v3 and read again, a trace
  // (a v4 one above all, whose lines are calls rather than rows) gives the same rows and hints.
  const Trace again = parse_trace(as_v3(trace), "fuzz.v3.trace");
  if (again.rows != trace.rows || again.hints != trace.hints || again.has_outcomes != trace.has_outcomes)
    __builtin_trap();
  // Keep each run cheap: simulation tables scale with layers and experts.
  if (trace.meta.experts > 4096 || trace.meta.layers > 256) return;
  for (uint32_t slots : {1u, 2u, 5u}) {
    const uint64_t belady = simulate(trace, slots, PolicySpec{PolicyKind::Belady, 0}).misses;
    // The floor must hold on every trace, hint rows included.
    for (const PolicySpec other :
         {PolicySpec{PolicyKind::Lru, 0}, PolicySpec{PolicyKind::Lfu, 0}, PolicySpec{PolicyKind::Lfru, 2.0}})
      if (belady > simulate(trace, slots, other).misses) __builtin_trap();
  }
  if (trace.has_outcomes) recorded_result(trace);
}

}  // namespace moepage::fuzz
