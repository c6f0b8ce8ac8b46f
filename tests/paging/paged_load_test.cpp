// Paged load never reads expert bytes: two models that differ only in expert count (64 vs 512
// per layer, the larger one 8x the expert bytes) load under lru with no expert byte read, so load
// time cannot grow with expert bytes. Times are printed for the record; bytes are asserted.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>

#include "paging_fixture.hpp"

using namespace moepage::test;

TEST_CASE("a paged load reads no expert bytes whatever the expert count") {
  CapturingHost host;
  Plugins plugins(host.get());
  for (const uint32_t experts : {64u, 512u}) {
    CAPTURE(experts);
    SyntheticCatalog model(6, experts, 4, /*sparse=*/true);
    auto transport = plugins.transport("pread", {{"threads", "2"}});
    const auto t0 = std::chrono::steady_clock::now();
    auto pager = plugins.pager("lru", {{"budget", std::to_string(model.budget_for(8))}}, model.catalog, transport);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("paged load, %u experts per layer (%.1f MiB of experts): %.2f ms\n", experts,
                double(model.n_layers - 1) * experts * SyntheticCatalog::kExpertBytes / (1 << 20), ms);
    const mp_pager_stats s = pager.stats();
    CHECK(s.resident == 0);
    CHECK(s.load_bytes_read == 0);
    CHECK(transport.stats().bytes_read == 0);
    CHECK(s.pool_bytes == model.budget_for(8));  // the pool does not grow with the expert count
  }
}
