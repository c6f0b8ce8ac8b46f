// The adapter-prefetch pager: validates its HFADPT file against the model, prefetches the next
// layer's predicted experts after observe(), never changes what acquire returns, and reports
// predictions and hits.
#include <doctest/doctest.h>

#include <vector>

#include "moepage/pager_core/adapter_file.hpp"
#include "paging_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace moepage::test;
namespace pc = moepage::pager;

namespace {

std::filesystem::path write_adapter(const SyntheticCatalog& model, uint32_t d_model, uint64_t seed) {
  pc::AdapterModel m;
  m.n_layers = model.n_layers;
  m.d_model = d_model;
  m.n_experts = model.n_experts;
  m.has_experts = model.has_experts;
  const auto path = unique_temp_path("paging-adapter");
  pc::write_adapter_file(path.string(), pc::random_adapter(m, 4, seed));
  return path;
}

// The experts of every prediction event the pager traces, in order.
std::vector<uint32_t>* predictions_of(void* ctx) { return static_cast<std::vector<uint32_t>*>(ctx); }
void record_prediction(void* ctx, const mp_trace_event* e) {
  if (e->kind == MP_TRACE_PREDICTION) predictions_of(ctx)->push_back(e->expert);
}

}  // namespace

TEST_CASE("after observe the predicted experts of the next layer are prefetched and counted") {
  CapturingHost host;
  Plugins plugins(host.get());
  SyntheticCatalog model(4, 8, 2);
  const auto adapter = write_adapter(model, 16, 1);
  auto transport = plugins.transport("pinned-async", {{"threads", "2"}});
  {
    auto pager =
        plugins.pager("adapter-prefetch",
                      {{"budget", std::to_string(model.budget_for(6))}, {"adapter", adapter.string()}, {"top_m", "4"}},
                      model.catalog, transport);
    std::vector<float> hidden(16);
    for (size_t i = 0; i < hidden.size(); ++i) hidden[i] = float(i % 5) - 2.0f;
    pager.begin_token(0);
    acquire(pager, 1, {0, 1});
    REQUIRE(pager.observe(1, hidden.data(), 16, nullptr));
    mp_pager_stats s = pager.stats();
    CHECK(s.prefetch_issued == 4);
    auto got = acquire(pager, 2, {6, 7});
    CHECK(model.slot_holds(got.slots[0], 2, 6));
    CHECK(model.slot_holds(got.slots[1], 2, 7));
    s = pager.stats();
    CHECK(s.predictions == 4);
    CHECK(s.predictions_hit == s.hits);  // in layer 2 only predicted experts can hit
    CHECK(s.predictions_hit <= 2);
  }
  std::filesystem::remove(adapter);
}

TEST_CASE("top_m 0 prefetches half of the router's top-k, rounded up") {
  // (top-k, the experts observe() then prefetches): Flash's top-6 gives 3, the count that decoded
  // fastest on the GPU; a top-2 model 1; a top-5 model 3.
  for (const auto& [k, expected] : std::vector<std::pair<uint32_t, uint64_t>>{{6, 3}, {2, 1}, {5, 3}}) {
    CAPTURE(k);
    CapturingHost host;
    Plugins plugins(host.get());
    SyntheticCatalog model(4, 16, k);
    const auto adapter = write_adapter(model, 16, 3);
    auto transport = plugins.transport("pread", {{"threads", "1"}});
    {
      auto pager = plugins.pager("adapter-prefetch",
                                 {{"budget", std::to_string(model.budget_for(2 * k))}, {"adapter", adapter.string()}},
                                 model.catalog, transport);
      std::vector<float> hidden(16);
      for (size_t i = 0; i < hidden.size(); ++i) hidden[i] = float(i % 7) - 3.0f;
      pager.begin_token(0);
      std::vector<int32_t> request(k);
      for (uint32_t i = 0; i < k; ++i) request[i] = int32_t(i);
      acquire(pager, 1, request);
      REQUIRE(pager.observe(1, hidden.data(), 16, nullptr));
      CHECK(pager.stats().prefetch_issued == expected);
    }
    std::filesystem::remove(adapter);
  }
}

TEST_CASE("an adapter whose d_model does not match the model is refused naming the file") {
  CapturingHost host;
  Plugins plugins(host.get());
  SyntheticCatalog model(4, 8, 2);
  const auto adapter = write_adapter(model, 32, 2);  // the catalog says d_model 16
  auto transport = plugins.transport("pread", {{"threads", "1"}});
  CHECK_THROWS_WITH(plugins.pager("adapter-prefetch",
                                  {{"budget", std::to_string(model.budget_for(4))}, {"adapter", adapter.string()}},
                                  model.catalog, transport),
                    doctest::Contains(adapter.string().c_str()));
  std::filesystem::remove(adapter);
}

TEST_CASE("scores of the described linear predictor, handed over instead of the state, predict as observe does") {
  CapturingHost host;
  Plugins plugins(host.get());
  SyntheticCatalog model(4, 8, 2);
  const auto adapter = write_adapter(model, 16, 3);
  auto transport = plugins.transport("pread", {{"threads", "1"}});
  {
    const std::vector<std::pair<std::string, std::string>> options = {
        {"budget", std::to_string(model.budget_for(6))}, {"adapter", adapter.string()}, {"top_m", "4"}};
    auto by_state = plugins.pager("adapter-prefetch", options, model.catalog, transport);
    auto by_scores = plugins.pager("adapter-prefetch", options, model.catalog, transport);
    std::vector<uint32_t> predicted_by_state, predicted_by_scores;
    REQUIRE(by_state.set_trace(record_prediction, &predicted_by_state));
    REQUIRE(by_scores.set_trace(record_prediction, &predicted_by_scores));

    mp_linear_predictor none{};
    CHECK_FALSE(by_scores.linear_predictor(3, none));  // the last layer has no successor to predict

    for (uint32_t step = 0; step < 3; ++step) {
      std::vector<float> hidden(16);
      for (size_t i = 0; i < hidden.size(); ++i) hidden[i] = float((i * 7 + step * 3) % 11) * 0.25f - 1.2f;
      by_state.begin_token(step);
      by_scores.begin_token(step);
      REQUIRE(by_state.observe(1, hidden.data(), 16, nullptr));
      mp_linear_predictor p{};
      REQUIRE(by_scores.linear_predictor(1, p));
      REQUIRE(p.rank == 4);
      REQUIRE(p.d_model == 16);
      REQUIRE(p.n_experts == 8);
      // b (a h) + bias, summed in the scorer's order: the same floats, so the same top M.
      std::vector<float> low(p.rank), scores(p.n_experts);
      for (uint32_t r = 0; r < p.rank; ++r) {
        float acc = 0.0f;
        for (uint32_t c = 0; c < p.d_model; ++c) acc += p.a[r * p.d_model + c] * hidden[c];
        low[r] = acc;
      }
      for (uint32_t e = 0; e < p.n_experts; ++e) {
        float acc = p.bias != nullptr ? p.bias[e] : 0.0f;
        for (uint32_t r = 0; r < p.rank; ++r) acc += p.b[e * p.rank + r] * low[r];
        scores[e] = acc;
      }
      by_scores.observe_scores(1, scores);
      acquire(by_state, 2, {6, 7});
      acquire(by_scores, 2, {6, 7});
    }
    REQUIRE(predicted_by_state.size() == 12);  // three steps of the top 4
    CHECK(predicted_by_scores == predicted_by_state);
    const mp_pager_stats a = by_state.stats(), b = by_scores.stats();
    CHECK(a.prefetch_issued == b.prefetch_issued);
    CHECK(a.predictions_hit == b.predictions_hit);
    CHECK(a.hits == b.hits);

    // Scores of the wrong length, or for a layer with no predictor, are refused naming both.
    const std::vector<float> short_scores(7, 0.0f);
    CHECK_THROWS_WITH(by_scores.observe_scores(1, short_scores), doctest::Contains("got 7 scores"));
    const std::vector<float> scores(8, 0.0f);
    CHECK_THROWS_WITH(by_scores.observe_scores(3, scores), doctest::Contains("predicts nothing after that layer"));
  }
  std::filesystem::remove(adapter);
}
