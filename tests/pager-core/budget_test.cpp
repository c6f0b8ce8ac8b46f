// Budget sizing messages (exact text) and the meminfo parser.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>

#include "moepage/pager_core/budget.hpp"
#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/meminfo.hpp"

using namespace moepage::pager;

namespace {
constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

BudgetInputs six_layers(uint64_t budget) {
  BudgetInputs in;
  in.budget_bytes = budget;
  in.paged_layers = 6;
  in.n_experts = 64;
  in.top_k = 4;
  in.expert_bytes = 13 * kMiB + kMiB / 4;  // 13.25 MiB
  return in;
}

// The same with budget: auto over `available` bytes (nullopt: unreadable, for the reason `error`).
BudgetInputs six_layers_auto(std::optional<uint64_t> available, std::string error = "") {
  BudgetInputs in = six_layers(0);
  in.is_auto = true;
  in.available_bytes = available;
  in.available_error = std::move(error);
  return in;
}

std::string budget_error(const BudgetInputs& in) {
  try {
    decide_budget(in);
  } catch (const PagerError& e) {
    CHECK(e.kind() == ErrorKind::Budget);
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("slots per layer are the budget over paged layers times bytes per expert") {
  const auto d = decide_budget(six_layers(1000 * kMiB));  // 1000 / 79.5 = 12 slots
  CHECK(d.mode == BudgetMode::Paged);
  CHECK(d.slots_per_layer == 12);
  CHECK(d.pool_bytes == 12 * 6 * (13 * kMiB + kMiB / 4));
  CHECK(d.message ==
        "budget 1000.0 MiB buys 12 slots per layer over 6 paged layers (13.25 MiB per expert): 954.0 MiB of slot "
        "pools, 12 of 64 experts per layer");
}

TEST_CASE("an explicit budget larger than the available memory is kept but warned about") {
  auto in = six_layers(1000 * kMiB);
  in.available_bytes = 512 * kMiB;
  const auto d = decide_budget(in);
  CHECK(d.slots_per_layer == 12);
  CHECK(d.message ==
        "budget 1000.0 MiB buys 12 slots per layer over 6 paged layers (13.25 MiB per expert): 954.0 MiB of slot "
        "pools, 12 of 64 experts per layer; warning: more than the 512.0 MiB available");
  in.available_bytes = 2 * kGiB;
  CHECK(decide_budget(in).message.find("warning") == std::string::npos);
}

TEST_CASE("a budget below top-k slots is an error naming what it buys, what top-k needs and the minimum") {
  CHECK(budget_error(six_layers(240 * kMiB)) ==
        "budget 240.0 MiB buys 3 slots per layer over 6 paged layers (13.25 MiB per expert); top-k needs 4 slots: "
        "minimum budget 318.0 MiB");
  CHECK(budget_error(six_layers(40 * kMiB)) ==
        "budget 40.0 MiB buys 0 slots per layer over 6 paged layers (13.25 MiB per expert); top-k needs 4 slots: "
        "minimum budget 318.0 MiB");
  // Exactly the minimum works.
  CHECK(decide_budget(six_layers(318 * kMiB)).slots_per_layer == 4);
}

TEST_CASE("when every expert fits, there is one slot per expert and the message says so") {
  const auto d = decide_budget(six_layers(64 * kGiB));
  CHECK(d.mode == BudgetMode::HoldsAll);
  CHECK(d.slots_per_layer == 64);
  CHECK(d.pool_bytes == 64ull * 6 * (13 * kMiB + kMiB / 4));
  CHECK(d.message ==
        "budget 64.0 GiB holds every expert (64 per layer over 6 paged layers, 4.97 GiB): one slot per expert, "
        "each filled on first use, none evicted");
}

TEST_CASE("auto budget is available memory minus the reserve") {
  auto in = six_layers_auto(9 * kGiB);
  in.reserve_bytes = 8 * kGiB;
  const auto d = decide_budget(in);
  CHECK(d.budget_bytes == kGiB);
  CHECK(d.slots_per_layer == 12);
  CHECK(d.message ==
        "budget 1.0 GiB (auto: 9.0 GiB available minus 8.0 GiB reserve) buys 12 slots per layer over 6 paged layers "
        "(13.25 MiB per expert): 954.0 MiB of slot pools, 12 of 64 experts per layer");
}

TEST_CASE("auto with unreadable memory information asks for an explicit size") {
  CHECK(budget_error(six_layers_auto(std::nullopt, "/proc/meminfo: has no MemAvailable line")) ==
        "budget auto: cannot read the available memory (/proc/meminfo: has no MemAvailable line); set an explicit "
        "budget, e.g. budget: 8GiB");
}

TEST_CASE("auto with less memory than the reserve is an error, not a wrapped-around budget") {
  CHECK(budget_error(six_layers_auto(6 * kGiB)) ==
        "budget auto: 6.0 GiB available after the dense weights is not more than the 8.0 GiB reserve; set an explicit "
        "budget or a smaller reserve");
}

TEST_CASE("nonsense geometry is refused by the budget") {
  auto in = six_layers(kGiB);
  in.top_k = 0;
  CHECK(budget_error(in) == "budget: top-k 0 must be in 1..64");
  in = six_layers(kGiB);
  in.expert_bytes = 0;
  CHECK(budget_error(in) == "budget: the expert catalog reports 0 bytes per expert");
  in = six_layers(kGiB);
  in.paged_layers = 0;
  CHECK(decide_budget(in).mode == BudgetMode::HoldsAll);
}

TEST_CASE("meminfo parsing reads MemTotal, MemFree and MemAvailable in bytes") {
  const char* text =
      "MemTotal:       24521564 kB\n"
      "MemFree:         1204448 kB\n"
      "MemAvailable:   17342176 kB\n"
      "Active(anon):     123456 kB\n"
      "HugePages_Total:       0\n";
  const MemInfo info = parse_meminfo(text);
  CHECK(info.mem_total == 24521564ull * 1024);
  CHECK(info.mem_free == 1204448ull * 1024);
  CHECK(info.mem_available == 17342176ull * 1024);
  CHECK(mem_available_bytes(text) == 17342176ull * 1024);
}

TEST_CASE("meminfo errors name the source and the line") {
  CHECK_THROWS_WITH(parse_meminfo("", "/fake/meminfo"), "/fake/meminfo: is empty");
  CHECK_THROWS_WITH(mem_available_bytes("MemTotal: 10 kB\n", "/fake/meminfo"),
                    "/fake/meminfo: has no MemAvailable line");
  CHECK_THROWS_WITH(parse_meminfo("MemTotal: 10 kB\nMemAvailable: lots kB\n", "/fake/meminfo"),
                    "/fake/meminfo line 2: no number (expected '<key>: <number> kB', got 'MemAvailable: lots kB')");
  CHECK_THROWS_WITH(parse_meminfo("MemAvailable: 10 MB\n", "m"),
                    "m line 1: unknown unit (expected '<key>: <number> kB', got 'MemAvailable: 10 MB')");
  CHECK_THROWS_WITH(parse_meminfo("garbage\n", "m"), "m line 1: no key (expected '<key>: <number> kB', got 'garbage')");
  CHECK_THROWS_WITH(parse_meminfo("MemAvailable: 99999999999999999999 kB\n", "m"),
                    "m line 1: number too large (expected '<key>: <number> kB', got 'MemAvailable: "
                    "99999999999999999999 kB')");
  CHECK_THROWS_WITH(parse_meminfo("MemAvailable: 18014398509481984 kB\n", "m"),  // 2^54 kB overflows bytes
                    "m line 1: number too large (expected '<key>: <number> kB', got 'MemAvailable: "
                    "18014398509481984 kB')");
}
