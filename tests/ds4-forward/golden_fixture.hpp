// The transformers golden fixtures (tools/golden/make_fixtures.py -> tests/fixtures, or
// $MOEPAGE_DS4_FIXTURES): finding them, loading one (checkpoint, config, expert catalog, prompt,
// reference logits and greedy ids), and the comparisons the forward tests make. Shared by the
// CPU suite (ds4-forward) and the GPU suite (ds4-hip-forward).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "deepseek4/forward/bind_weights.hpp"
#include "deepseek4/model/config_json.hpp"
#include "npy.hpp"
#include "support/test_paths.hpp"

namespace moepage::ds4::test {

inline std::filesystem::path fixture_root() {
  if (const char* env = std::getenv("MOEPAGE_DS4_FIXTURES")) return env;
  return ::moepage::test::source_path("tests/fixtures");
}

// DeepSeek-V4 golden fixtures: folders with a meta.json that lists prefill chunks. The fixtures
// are committed: finding none means a broken checkout or a wrong $MOEPAGE_DS4_FIXTURES, never a
// reason to pass, so that throws.
inline std::vector<std::filesystem::path> golden_fixtures() {
  std::vector<std::filesystem::path> out;
  if (std::filesystem::is_directory(fixture_root())) {
    for (const auto& entry : std::filesystem::directory_iterator(fixture_root())) {
      const std::filesystem::path meta = entry.path() / "meta.json";
      if (!std::filesystem::exists(meta)) continue;
      std::ifstream f(meta);
      const auto j = nlohmann::json::parse(f, nullptr, false);
      if (!j.is_discarded() && j.contains("prefill_chunks") && j.contains("decode_steps")) out.push_back(entry.path());
    }
  }
  if (out.empty()) throw std::runtime_error("no golden fixtures in " + fixture_root().string());
  std::sort(out.begin(), out.end());
  return out;
}

// One fixture, opened and read. The checkpoint and resolver sit behind pointers because the
// weights and catalog point into them.
struct GoldenFixture {
  std::filesystem::path dir;
  Config cfg;
  std::unique_ptr<ckpt::Checkpoint> checkpoint;
  std::unique_ptr<TensorResolver> resolver;
  std::unique_ptr<ExpertCatalog> catalog;
  std::vector<int32_t> prompt, greedy;               // greedy: decode_steps + 1 ids
  std::vector<uint32_t> chunks;                      // the prompt cut into prefill chunks
  moepage::test::NpyArray prefill, decode, teacher;  // [P, V], [n, V], [P + n, V]
  size_t P = 0, n = 0, V = 0;

  explicit GoldenFixture(const std::filesystem::path& d) : dir(d) {
    std::ifstream mf(dir / "meta.json");
    const auto meta = nlohmann::json::parse(mf);
    cfg = load_config_json(dir).config;
    checkpoint = std::make_unique<ckpt::Checkpoint>(ckpt::Checkpoint::open(dir));
    resolver = std::make_unique<TensorResolver>(*checkpoint);
    resolver->check_required(cfg);
    catalog = ExpertCatalog::build(*resolver, cfg);
    const auto prompt_npy = moepage::test::read_npy((dir / "prompt_ids.npy").string());
    const auto greedy_npy = moepage::test::read_npy((dir / "greedy_ids.npy").string());
    prompt.assign(prompt_npy.i64.begin(), prompt_npy.i64.end());
    greedy.assign(greedy_npy.i64.begin(), greedy_npy.i64.end());
    prefill = moepage::test::read_npy((dir / "prefill_logits.npy").string());
    decode = moepage::test::read_npy((dir / "decode_logits.npy").string());
    teacher = moepage::test::read_npy((dir / "teacher_forced_logits.npy").string());
    chunks = meta["prefill_chunks"].get<std::vector<uint32_t>>();
    P = prompt.size();
    n = size_t(meta["decode_steps"].get<int>());
    V = cfg.vocab_size;
    if (!shapes_agree())
      throw std::runtime_error(dir.string() + ": the .npy arrays do not have the shapes meta.json promises");
  }

  // Every expert of every layer in host memory.
  std::unique_ptr<ResidentExpertSource> resident_experts() const {
    return load_resident_experts(*resolver, *catalog, cfg);
  }
  Weights weights() const { return bind_weights(*resolver, cfg); }
  ExpertLayout layout() const { return expert_layout(*catalog, cfg); }

  // The arrays have the shapes meta.json promises (checked on opening): greedy n + 1 ids, prefill
  // [P, V], decode [n, V], teacher [P + n, V].
  bool shapes_agree() const {
    auto is = [](const moepage::test::NpyArray& a, size_t rows, size_t cols) {
      return a.shape == std::vector<int64_t>{int64_t(rows), int64_t(cols)};
    };
    return greedy.size() == n + 1 && is(prefill, P, V) && is(decode, n, V) && is(teacher, P + n, V);
  }
};

inline int32_t argmax(const float* row, size_t n) { return int32_t(std::max_element(row, row + n) - row); }

// Greedy decoding from the prompt's last logits row, each choice fed back for as long as it is the
// reference's: `first` is the first choice, `matching` how many later choices agreed, and `worst`
// the largest diff(row, reference row, V) over the steps taken. Model: the CPU or the GPU model.
struct GreedyRun {
  int32_t first = -1;
  size_t matching = 0;
  double worst = 0;
};
template <class Model, class Diff>
GreedyRun greedy_against_reference(Model& m, const GoldenFixture& fx, const float* last_prompt_row, Diff diff) {
  GreedyRun r;
  const size_t V = fx.V;
  int32_t next = r.first = argmax(last_prompt_row, V);
  std::vector<float> row(V);
  for (size_t i = 0; i < fx.n && next == fx.greedy[i]; ++i) {
    m.forward(&next, 1, row.data(), false);
    r.worst = std::max(r.worst, diff(row.data(), fx.decode.f32.data() + i * V, V));
    next = argmax(row.data(), V);
    if (next == fx.greedy[i + 1]) ++r.matching;
  }
  return r;
}

// Resets `m` and feeds the prompt in the fixture's chunks, every position's logits into
// `logits` ([P, V]); returns how many tokens the chunks held (P when they cover the prompt).
template <class Model>
uint32_t chunked_prefill(Model& m, const GoldenFixture& fx, float* logits) {
  m.reset();
  uint32_t at = 0;
  for (uint32_t c : fx.chunks) {
    if (at + c > fx.P) break;
    m.forward(fx.prompt.data() + at, c, logits + size_t(at) * fx.V, true);
    at += c;
  }
  return at;
}

// Resets `m` and runs the prompt and the reference's greedy ids in one pass (teacher forcing):
// the logits of every position, [P + n, V].
template <class Model>
std::vector<float> teacher_forced(Model& m, const GoldenFixture& fx) {
  std::vector<int32_t> full = fx.prompt;
  full.insert(full.end(), fx.greedy.begin(), fx.greedy.begin() + long(fx.n));
  std::vector<float> all(full.size() * fx.V);
  m.reset();
  m.forward(full.data(), uint32_t(full.size()), all.data(), true);
  return all;
}

inline double max_abs_diff(const float* a, const float* b, size_t n) {
  double d = 0;
  for (size_t i = 0; i < n; ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

inline double max_abs(const float* a, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, double(std::fabs(a[i])));
  return m;
}

}  // namespace moepage::ds4::test
