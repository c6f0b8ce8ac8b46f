// The forward pass against Hugging Face transformers' float64 references: every fixture that
// tools/golden/make_fixtures.py wrote into tests/fixtures (or $MOEPAGE_DS4_FIXTURES).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "deepseek4/forward/model.hpp"
#include "golden_fixture.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::test;
namespace fs = std::filesystem;

namespace {

constexpr double kTolerance = 1e-3;  // max abs logit difference (issue 4)

void check_fixture(const fs::path& dir) {
  INFO("fixture ", dir.string());
  const GoldenFixture fx(dir);
  const size_t P = fx.P, n = fx.n, V = fx.V;
  REQUIRE(fx.greedy.size() == n + 1);
  REQUIRE(fx.prefill.shape == std::vector<int64_t>{int64_t(P), int64_t(V)});
  REQUIRE(fx.decode.shape == std::vector<int64_t>{int64_t(n), int64_t(V)});
  REQUIRE(fx.teacher.shape == std::vector<int64_t>{int64_t(P + n), int64_t(V)});

  auto experts = fx.resident_experts();
  cpu::ThreadPool pool(2);
  Model m(fx.cfg, fx.weights(), fx.layout(), experts.get(), pool, ModelOptions{uint32_t(P + n + 1), 64});

  // Whole-prompt prefill.
  std::vector<float> logits(P * V);
  m.forward(fx.prompt.data(), uint32_t(P), logits.data(), true);
  CHECK(max_abs_diff(logits.data(), fx.prefill.f32.data(), P * V) < kTolerance);

  // Greedy decode, feeding our own choice back: it must match the reference ids step by step.
  int32_t next = argmax(logits.data() + (P - 1) * V, V);
  CHECK(next == fx.greedy[0]);
  std::vector<float> row(V);
  double worst_decode = 0;
  size_t matching = 0;
  for (size_t i = 0; i < n && next == fx.greedy[i]; ++i) {
    m.forward(&next, 1, row.data(), false);
    worst_decode = std::max(worst_decode, max_abs_diff(row.data(), fx.decode.f32.data() + i * V, V));
    next = argmax(row.data(), V);
    if (next == fx.greedy[i + 1]) ++matching;
  }
  CHECK(matching == n);
  CHECK(worst_decode < kTolerance);

  // The prompt in three chunks (one boundary on a compressor window, one off).
  m.reset();
  uint32_t at = 0;
  for (uint32_t c : fx.chunks) {
    m.forward(fx.prompt.data() + at, c, logits.data() + size_t(at) * V, true);
    at += c;
  }
  REQUIRE(at == P);
  CHECK(max_abs_diff(logits.data(), fx.prefill.f32.data(), P * V) < kTolerance);

  // One pass over prompt + greedy ids.
  std::vector<int32_t> full = fx.prompt;
  full.insert(full.end(), fx.greedy.begin(), fx.greedy.begin() + long(n));
  std::vector<float> all((P + n) * V);
  m.reset();
  m.forward(full.data(), uint32_t(full.size()), all.data(), true);
  CHECK(max_abs_diff(all.data(), fx.teacher.f32.data(), (P + n) * V) < kTolerance);
  MESSAGE(dir.filename().string(), ": prefill max |diff| ", max_abs_diff(logits.data(), fx.prefill.f32.data(), P * V),
          ", decode ", worst_decode, ", greedy ", matching, "/", n);
}

}  // namespace

TEST_CASE("every golden fixture matches transformers: prefill, chunked prefill, greedy decode, teacher forcing") {
  const auto list = golden_fixtures();
  // The fixtures are committed: finding none means a broken checkout or a wrong
  // $MOEPAGE_DS4_FIXTURES, never a reason to pass.
  INFO("fixture folder ", fixture_root().string());
  REQUIRE(!list.empty());
  for (const auto& dir : list) check_fixture(dir);
}
