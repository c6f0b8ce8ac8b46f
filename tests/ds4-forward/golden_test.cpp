// The forward pass against Hugging Face transformers' float64 references: every fixture that
// tools/golden/make_fixtures.py wrote into tests/fixtures (or $MOEPAGE_DS4_FIXTURES).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "deepseek4/forward/bind_weights.hpp"
#include "deepseek4/forward/model.hpp"
#include "deepseek4/model/config_json.hpp"
#include "npy.hpp"

using namespace moepage;
using namespace moepage::ds4;
namespace fs = std::filesystem;

namespace {

constexpr double kTolerance = 1e-3;  // max abs logit difference (issue 4)

fs::path fixture_root() {
  if (const char* env = std::getenv("MOEPAGE_DS4_FIXTURES")) return env;
  return fs::path(MOEPAGE_SOURCE_DIR) / "tests" / "fixtures";
}

// DeepSeek-V4 golden fixtures: folders with a meta.json that lists prefill chunks.
std::vector<fs::path> fixtures() {
  std::vector<fs::path> out;
  if (!fs::is_directory(fixture_root())) return out;
  for (const auto& entry : fs::directory_iterator(fixture_root())) {
    const fs::path meta = entry.path() / "meta.json";
    if (!fs::exists(meta)) continue;
    std::ifstream f(meta);
    const auto j = nlohmann::json::parse(f, nullptr, false);
    if (!j.is_discarded() && j.contains("prefill_chunks") && j.contains("decode_steps")) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

double row_diff(const float* a, const float* b, size_t n) {
  double d = 0;
  for (size_t i = 0; i < n; ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

int32_t argmax(const float* row, size_t n) { return int32_t(std::max_element(row, row + n) - row); }

void check_fixture(const fs::path& dir) {
  INFO("fixture ", dir.string());
  std::ifstream mf(dir / "meta.json");
  const auto meta = nlohmann::json::parse(mf);
  const Config cfg = load_config_json(dir).config;
  const ckpt::Checkpoint ck = ckpt::Checkpoint::open(dir);
  const TensorResolver resolver(ck);
  resolver.check_required(cfg);
  const auto catalog = ExpertCatalog::build(resolver, cfg);
  auto experts = load_resident_experts(resolver, *catalog, cfg);

  const auto prompt_npy = test::read_npy((dir / "prompt_ids.npy").string());
  const auto greedy_npy = test::read_npy((dir / "greedy_ids.npy").string());
  const auto prefill = test::read_npy((dir / "prefill_logits.npy").string());
  const auto decode = test::read_npy((dir / "decode_logits.npy").string());
  const auto teacher = test::read_npy((dir / "teacher_forced_logits.npy").string());
  const std::vector<int32_t> prompt(prompt_npy.i64.begin(), prompt_npy.i64.end());
  const std::vector<int32_t> greedy(greedy_npy.i64.begin(), greedy_npy.i64.end());
  const size_t P = prompt.size(), n = size_t(meta["decode_steps"].get<int>()), V = cfg.vocab_size;
  REQUIRE(greedy.size() == n + 1);
  REQUIRE(prefill.shape == std::vector<int64_t>{int64_t(P), int64_t(V)});
  REQUIRE(decode.shape == std::vector<int64_t>{int64_t(n), int64_t(V)});
  REQUIRE(teacher.shape == std::vector<int64_t>{int64_t(P + n), int64_t(V)});

  cpu::ThreadPool pool(2);
  Model m(cfg, bind_weights(resolver, cfg), expert_layout(*catalog, cfg), experts.get(), pool,
          ModelOptions{uint32_t(P + n + 1), 64});

  // Whole-prompt prefill.
  std::vector<float> logits(P * V);
  m.forward(prompt.data(), uint32_t(P), logits.data(), true);
  CHECK(row_diff(logits.data(), prefill.f32.data(), P * V) < kTolerance);

  // Greedy decode, feeding our own choice back: it must match the reference ids step by step.
  int32_t next = argmax(logits.data() + (P - 1) * V, V);
  CHECK(next == greedy[0]);
  std::vector<float> row(V);
  double worst_decode = 0;
  size_t matching = 0;
  for (size_t i = 0; i < n && next == greedy[i]; ++i) {
    m.forward(&next, 1, row.data(), false);
    worst_decode = std::max(worst_decode, row_diff(row.data(), decode.f32.data() + i * V, V));
    next = argmax(row.data(), V);
    if (next == greedy[i + 1]) ++matching;
  }
  CHECK(matching == n);
  CHECK(worst_decode < kTolerance);

  // The prompt in three chunks (one boundary on a compressor window, one off).
  std::vector<uint32_t> chunks = meta["prefill_chunks"].get<std::vector<uint32_t>>();
  m.reset();
  uint32_t at = 0;
  for (uint32_t c : chunks) {
    m.forward(prompt.data() + at, c, logits.data() + size_t(at) * V, true);
    at += c;
  }
  REQUIRE(at == P);
  CHECK(row_diff(logits.data(), prefill.f32.data(), P * V) < kTolerance);

  // One pass over prompt + greedy ids.
  std::vector<int32_t> full = prompt;
  full.insert(full.end(), greedy.begin(), greedy.begin() + long(n));
  std::vector<float> all((P + n) * V);
  m.reset();
  m.forward(full.data(), uint32_t(full.size()), all.data(), true);
  CHECK(row_diff(all.data(), teacher.f32.data(), (P + n) * V) < kTolerance);
  MESSAGE(dir.filename().string(), ": prefill max |diff| ", row_diff(logits.data(), prefill.f32.data(), P * V),
          ", decode ", worst_decode, ", greedy ", matching, "/", n);
}

}  // namespace

TEST_CASE("every golden fixture matches transformers: prefill, chunked prefill, greedy decode, teacher forcing") {
  const auto list = fixtures();
  // The fixtures are committed: finding none means a broken checkout or a wrong
  // $MOEPAGE_DS4_FIXTURES, never a reason to pass.
  INFO("fixture folder ", fixture_root().string());
  REQUIRE(!list.empty());
  for (const auto& dir : list) check_fixture(dir);
}
