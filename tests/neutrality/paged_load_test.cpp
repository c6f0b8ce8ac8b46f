// Paged load never reads expert bytes (the system this project grows from was reverted for cold
// loads past 120 s): two synthesized tiny models that differ only in expert count (64 vs 512 per
// layer, 8x the expert bytes) load under lru with no expert byte read, at load or by the
// transport. Load times are printed for the record; bytes are asserted.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "neutrality_harness.hpp"
#include "support/temp_dir.hpp"

TEST_CASE("a paged load of a synthesized model reads no expert bytes, with 64 or 512 experts per layer") {
  namespace fs = std::filesystem;
  moepage::test::Harness h;
  for (const int32_t experts : {64, 512}) {
    CAPTURE(experts);
    const moepage::test::TempDir tmp("paged-load");
    const fs::path dir = tmp / "model";
    const mp_synth_request req{sizeof(mp_synth_request), "tiny", dir.c_str(), 7, 4, experts, nullptr, 0};
    h.synthesize(req);
    const auto t0 = std::chrono::steady_clock::now();
    const moepage::test::Harness::Loaded loaded = h.load(dir, "lru", {}, /*slots=*/8, "pread", {{"threads", "2"}});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("lru load of a tiny model with %d experts per layer (%.1f MiB of experts): %.1f ms\n", experts,
                double(loaded.info.expert_bytes) / (1 << 20), ms);
    CHECK(loaded.pager_stats.resident == 0);
    CHECK(loaded.pager_stats.load_bytes_read == 0);
    CHECK(loaded.transport_bytes_read == 0);
  }
}
