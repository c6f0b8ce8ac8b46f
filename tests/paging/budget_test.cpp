// The paged pager's honest budget: below top-k slots is an error with the minimum, a budget that
// holds everything buys one slot per expert and says so, and auto needs readable memory information.
#include <doctest/doctest.h>

#include "paging_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace moepage::test;

TEST_CASE("a budget below top-k slots is a load error that names what it buys and the minimum") {
  PagingBench bench;
  const std::string what = bench.pager_refusal("lru", {{"budget", std::to_string(bench.model.budget_for(1))}});
  CHECK(what.find("buys 1 slot per layer over 3 paged layers") != std::string::npos);
  CHECK(what.find("top-k needs 2 slots: minimum budget") != std::string::npos);
}

TEST_CASE("a budget that holds every expert pages with one slot per expert and never evicts") {
  PagingBench bench("pread", "2");
  auto pager = bench.plugins.pager("paged", {{"budget", "1GiB"}}, bench.model.catalog, bench.transport);
  CHECK(bench.host.logged("holds every expert"));
  CHECK(bench.host.logged("one slot per expert, each filled on first use, none evicted"));
  mp_pager_stats s = pager.stats();
  CHECK(s.resident == 0);  // loading everything up front is the resident pager's job
  CHECK(s.load_bytes_read == 0);
  CHECK(s.slots_per_layer == 8);
  auto a = acquire(pager, 2, {7, 0});
  CHECK(bench.model.slot_holds(a.slots[0], 2, 7));
  CHECK(bench.model.slot_holds(a.slots[1], 2, 0));
  for (int32_t e = 0; e < 8; ++e) acquire(pager, 2, {e, (e + 1) % 8});
  auto again = acquire(pager, 2, {7, 0});
  CHECK(again.slots[0] == a.slots[0]);
  CHECK(again.slots[1] == a.slots[1]);
  s = pager.stats();
  CHECK(s.misses == 8);
}

TEST_CASE("auto budget with unreadable memory information is an error asking for an explicit size") {
  PagingBench bench("pread", "1", moepage::host::make_cpu_device_service("/nonexistent/meminfo"));
  const std::string what = bench.pager_refusal("lru", {{"budget", "auto"}});
  CHECK(what.find("budget auto: cannot read the available memory") != std::string::npos);
  CHECK(what.find("set an explicit budget") != std::string::npos);
}

TEST_CASE("auto budget is MemAvailable minus the reserve, in whole slots per layer") {
  SyntheticCatalog model(4, 8, 2);
  const TempFile meminfo_file("paging-meminfo");
  const auto& meminfo = meminfo_file.path();
  // 10 KiB reserve + exactly 5 slots per layer of available memory (in kB, as the kernel writes it).
  const uint64_t reserve = 10240, available = reserve + model.budget_for(5) + 100;
  write_file(meminfo, "MemTotal: 99999999 kB\nMemAvailable: " + std::to_string((available + 1023) / 1024) + " kB\n");
  PagingBench bench("pread", "1", moepage::host::make_cpu_device_service(meminfo));
  auto pager = bench.plugins.pager("lru", {{"budget", "auto"}, {"reserve", std::to_string(reserve)}},
                                   bench.model.catalog, bench.transport);
  const mp_pager_stats s = pager.stats();
  CHECK(s.resident == 0);
  CHECK(s.slots_per_layer == 5);
  CHECK(s.load_bytes_read == 0);
}
