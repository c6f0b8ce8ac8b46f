// Replays the committed fuzz seeds, and systematic damage to a valid adapter (every truncation,
// every single-byte change of the header), through the fuzz bodies with the ordinary compiler.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_entries.hpp"
#include "moepage/pager_core/adapter_file.hpp"
#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/trace.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

size_t replay_dir(const char* sub, void (*body)(const uint8_t*, size_t)) {
  const fs::path dir = fs::path(MOEPAGE_SOURCE_DIR) / "tests/fuzz-adapter/seeds" / sub;
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto bytes = read_bytes(entry.path());
    CAPTURE(entry.path().string());
    CHECK_NOTHROW(body(bytes.data(), bytes.size()));
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("every committed adapter seed is handled without an escaping error") {
  CHECK(replay_dir("adapter", moepage::fuzz::adapter_input) >= 3);
}

TEST_CASE("the adapter seeds named valid really are valid, so the fuzzer starts from real files") {
  moepage::pager::AdapterModel model;
  model.n_layers = 5;
  model.d_model = 6;
  model.n_experts = 4;
  model.has_experts = {0, 0, 1, 1, 1};
  size_t valid = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(MOEPAGE_SOURCE_DIR) / "tests/fuzz-adapter/seeds/adapter")) {
    if (entry.path().filename().string().rfind("valid-", 0) != 0) continue;
    const auto bytes = read_bytes(entry.path());
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
  for (const auto& entry : fs::directory_iterator(fs::path(MOEPAGE_SOURCE_DIR) / "tests/fuzz-adapter/seeds/trace")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("v4-", 0) != 0) continue;
    const auto bytes = read_bytes(entry.path());
    const std::string text(bytes.begin(), bytes.end());
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
  moepage::pager::AdapterModel model;
  model.n_layers = 5;
  model.d_model = 6;
  model.n_experts = 4;
  model.has_experts = {0, 0, 1, 1, 1};
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
