// How long the adapter-prefetch pager's host scoring takes at a model's geometry: one score()
// (B (A h)) and top_m(3) per call, the work its observe() does once per scored layer of a decode
// step while, on a GPU, the forward pass waits for the hint (arch.observe_after_attention). A
// random adapter of the given rank; d_model and the expert count default to DeepSeek-V4-Flash's.
//
//   build/bin/adapter-scorer-bench [--benchmark_filter=...]   (google-benchmark's options)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "moepage/pager_core/adapter_file.hpp"
#include "moepage/pager_core/adapter_scorer.hpp"

namespace {

using moepage::pager::AdapterModel;
using moepage::pager::AdapterScorer;

// Args: rank, d_model, experts. Twelve layers, as the 12-layer Flash slice; every layer scored
// in turn, so the adapter's bytes cycle through the caches as they do in a decode step.
void score_and_pick(benchmark::State& state) {
  const uint32_t rank = uint32_t(state.range(0)), d_model = uint32_t(state.range(1)),
                 experts = uint32_t(state.range(2)), layers = 12;
  AdapterModel model;
  model.n_layers = layers;
  model.d_model = d_model;
  model.n_experts = experts;
  model.has_experts.assign(layers, 1);
  AdapterScorer scorer(moepage::pager::random_adapter(model, rank, 1), layers);
  std::vector<float> hidden(d_model, 0.01f), scores(experts);
  std::vector<int32_t> top(3);
  uint32_t layer = 0;
  for (auto _ : state) {
    hidden[layer] += 1e-6f;
    scorer.score(layer, hidden, {}, scores);
    benchmark::DoNotOptimize(scorer.top_m(scores, 3, top));
    layer = (layer + 1) % (layers - 1);  // the last layer has no next layer to predict
  }
  const uint64_t entry_bytes = uint64_t(rank) * d_model * 4 + uint64_t(experts) * rank * 4;
  state.counters["entry_MB"] = double(entry_bytes) / 1e6;
  state.counters["GB/s"] = benchmark::Counter(double(entry_bytes), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(score_and_pick)
    ->ArgNames({"rank", "d_model", "experts"})
    ->Args({16, 4096, 256})
    ->Args({128, 4096, 256})
    ->Args({256, 4096, 256})
    ->Args({256, 256, 256})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
