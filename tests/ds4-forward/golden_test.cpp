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

  auto experts = fx.resident_experts();
  cpu::ThreadPool pool(2);
  Model m(fx.cfg, fx.weights(), fx.layout(), experts.get(), pool, ModelOptions{uint32_t(P + n + 1), 64});

  // Whole-prompt prefill.
  std::vector<float> logits(P * V);
  m.forward(fx.prompt.data(), uint32_t(P), logits.data(), true);
  CHECK(max_abs_diff(logits.data(), fx.prefill.f32.data(), P * V) < kTolerance);

  // Greedy decode, feeding our own choice back: it must match the reference ids step by step.
  const GreedyRun greedy = greedy_against_reference(m, fx, logits.data() + (P - 1) * V, max_abs_diff);
  CHECK(greedy.first == fx.greedy[0]);
  CHECK(greedy.matching == n);
  CHECK(greedy.worst < kTolerance);

  // The prompt in three chunks (one boundary on a compressor window, one off).
  REQUIRE(chunked_prefill(m, fx, logits.data()) == P);
  CHECK(max_abs_diff(logits.data(), fx.prefill.f32.data(), P * V) < kTolerance);

  // One pass over prompt + greedy ids.
  const std::vector<float> all = teacher_forced(m, fx);
  CHECK(max_abs_diff(all.data(), fx.teacher.f32.data(), (P + n) * V) < kTolerance);
  MESSAGE(dir.filename().string(), ": prefill max |diff| ", max_abs_diff(logits.data(), fx.prefill.f32.data(), P * V),
          ", decode ", greedy.worst, ", greedy ", greedy.matching, "/", n);
}

}  // namespace

TEST_CASE("every golden fixture matches transformers: prefill, chunked prefill, greedy decode, teacher forcing") {
  for (const auto& dir : golden_fixtures()) check_fixture(dir);
}
