// Replays the committed fuzz seeds, and systematic damage to a valid adapter (every truncation,
// every single-byte change of the header), through the fuzz bodies with the ordinary compiler.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_entries.hpp"
#include "moepage/pager_core/adapter_file.hpp"
#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/trace.hpp"
#include "support/seed_files.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

namespace {

size_t replay_dir(const char* sub, void (*body)(const uint8_t*, size_t)) {
  return moepage::test::replay_seeds(moepage::test::source_path("tests/fuzz-adapter/seeds") / sub, body);
}

}  // namespace

TEST_CASE("every committed adapter seed is handled without an escaping error") {
  CHECK(replay_dir("adapter", moepage::fuzz::adapter_input) >= 3);
}

TEST_CASE("the adapter seeds named valid really are valid, so the fuzzer starts from real files") {
  const moepage::pager::AdapterModel model = moepage::fuzz::adapter_model();
  size_t valid = 0;
  for (const auto& entry : fs::directory_iterator(moepage::test::source_path("tests/fuzz-adapter/seeds/adapter"))) {
    if (entry.path().filename().string().rfind("valid-", 0) != 0) continue;
    const auto bytes = moepage::test::read_file_bytes(entry.path());
    CAPTURE(entry.path().string());
    CHECK_NOTHROW(moepage::pager::parse_adapter(bytes, model, entry.path().string()));
    ++valid;
  }
  CHECK(valid == 3);
}

TEST_CASE("every committed trace seed is handled without an escaping error") {
  CHECK(replay_dir("trace", moepage::fuzz::trace_input) >= 3);
}

TEST_CASE("the v4 trace seeds reach the v4 reader: the valid ones parse, the others fail past the header") {
  size_t valid = 0, refused = 0;
  for (const auto& entry : fs::directory_iterator(moepage::test::source_path("tests/fuzz-adapter/seeds/trace"))) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("v4-", 0) != 0) continue;
    const std::string text = moepage::test::read_file(entry.path());
    CAPTURE(name);
    if (name.rfind("v4-valid-", 0) == 0) {
      const moepage::pager::Trace t = moepage::pager::parse_trace(text, name);
      CHECK(t.meta.version == 4);
      CHECK_FALSE(t.rows.empty());
      CHECK_FALSE(t.hints.empty());
      ++valid;
      continue;
    }
    try {
      moepage::pager::parse_trace(text, name);
      FAIL("no error");
    } catch (const moepage::pager::PagerError& e) {
      CHECK(std::string(e.what()).find(name + " line 1:") == std::string::npos);  // the header was accepted
      ++refused;
    }
  }
  CHECK(valid == 2);
  CHECK(refused == 3);
}

TEST_CASE("every truncation and every header byte change of a valid adapter is handled") {
  const moepage::pager::AdapterModel model = moepage::fuzz::adapter_model();
  const auto good = moepage::pager::serialize_adapter(moepage::pager::random_adapter(model, 2, 5));
  for (size_t len = 0; len <= good.size(); ++len) CHECK_NOTHROW(moepage::fuzz::adapter_input(good.data(), len));
  for (size_t at = 0; at < moepage::pager::kAdapterHeaderBytes + 4; ++at) {
    for (int v : {0x00, 0x01, 0x7F, 0x80, 0xFF}) {
      auto bad = good;
      bad[at] = uint8_t(v);
      CHECK_NOTHROW(moepage::fuzz::adapter_input(bad.data(), bad.size()));
    }
  }
}
