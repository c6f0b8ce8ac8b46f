// The adapter-prefetch pager: validates its HFADPT file against the model, prefetches the next
// layer's predicted experts after observe(), never changes what acquire returns, and reports
// predictions and hits.
#include <doctest/doctest.h>

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

}  // namespace

TEST_CASE("after observe the predicted experts of the next layer are prefetched and counted") {
  CapturingHost host;
  Plugins plugins(host.get());
  SyntheticCatalog model(4, 8, 2);
  const auto adapter = write_adapter(model, 16, 1);
  auto transport = plugins.transport("pinned-async", {{"threads", "2"}});
  {
    auto pager = plugins.pager("adapter-prefetch",
                               {{"budget", std::to_string(model.budget_for(6))}, {"adapter", adapter.string()}},
                               model.catalog, transport);
    std::vector<float> hidden(16);
    for (size_t i = 0; i < hidden.size(); ++i) hidden[i] = float(i % 5) - 2.0f;
    pager.begin_token(0);
    acquire(pager, 1, {0, 1});
    REQUIRE(pager.observe(1, hidden.data(), 16, nullptr));
    mp_pager_stats s = pager.stats();
    CHECK(s.prefetch_issued == 4);  // top_m defaults to top_k + 2
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
