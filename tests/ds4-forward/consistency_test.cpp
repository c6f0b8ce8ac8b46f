// Whole-prompt prefill, chunked prefill at any boundaries and token-by-token decode must see the
// same sequence state and so give the same logits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "deepseek4/forward/model.hpp"
#include "tiny_model.hpp"

using namespace moepage;
using namespace moepage::ds4;

namespace {

std::vector<int32_t> prompt(int n, uint32_t vocab) {
  std::vector<int32_t> ids(size_t(n), 0);
  for (int i = 0; i < n; ++i) ids[size_t(i)] = int32_t((i * 37 + 11) % int(vocab));
  return ids;
}

// Logits of every position, feeding the prompt in chunks of the given sizes.
std::vector<float> run_chunks(Model& m, const std::vector<int32_t>& ids, const std::vector<uint32_t>& chunks) {
  const size_t V = m.config().vocab_size;
  std::vector<float> logits(ids.size() * V);
  m.reset();
  uint32_t at = 0;
  for (uint32_t n : chunks) {
    m.forward(ids.data() + at, n, logits.data() + at * V, true);
    at += n;
  }
  REQUIRE(at == ids.size());
  return logits;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

bool all_finite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

void check_variant(test::Encoding enc) {
  const Config c = test::tiny_config();
  test::TinyModel tm(c, enc, 7);
  cpu::ThreadPool pool(2);
  Model m(c, tm.weights(), tm.layout(), &tm.experts(), pool, ModelOptions{64, 64});
  const auto ids = prompt(40, c.vocab_size);

  const auto whole = run_chunks(m, ids, {40});
  REQUIRE(all_finite(whole));
  // The logits must depend on the input: a sanity check that the test can fail.
  double spread = 0;
  for (size_t i = 0; i < whole.size(); ++i)
    spread = std::max(spread, double(std::fabs(whole[i] - whole[i % c.vocab_size])));
  CHECK(spread > 1e-2);

  // 16 closes CSA (ratio 4) and HCA (ratio 8) windows; 5, 23 and 30 fall inside windows.
  CHECK(max_abs_diff(whole, run_chunks(m, ids, {16, 7, 17})) < 1e-4);
  CHECK(max_abs_diff(whole, run_chunks(m, ids, {5, 18, 7, 10})) < 1e-4);
  std::vector<uint32_t> ones(40, 1);
  CHECK(max_abs_diff(whole, run_chunks(m, ids, ones)) < 1e-4);
  std::vector<uint32_t> mixed = {3};
  for (int i = 0; i < 13; ++i) mixed.push_back(1);
  mixed.push_back(24);
  CHECK(max_abs_diff(whole, run_chunks(m, ids, mixed)) < 1e-4);

  // A small internal batch splits long inputs; the result must not change.
  Model small_batch(c, tm.weights(), tm.layout(), &tm.experts(), pool, ModelOptions{64, 7});
  CHECK(max_abs_diff(whole, run_chunks(small_batch, ids, {40})) < 1e-4);

  // Last-token logits equal the last row of all-position logits.
  std::vector<float> last(c.vocab_size);
  m.reset();
  m.forward(ids.data(), 40, last.data(), false);
  std::vector<float> last_row(whole.end() - c.vocab_size, whole.end());
  CHECK(max_abs_diff(last, last_row) < 1e-5);
}

}  // namespace

TEST_CASE("prefill, chunked prefill and decode agree with F32 weights") { check_variant({Dtype::F32, Dtype::F32}); }

TEST_CASE("prefill, chunked prefill and decode agree with FP8 dense weights and FP4 experts") {
  check_variant({Dtype::F8_E4M3, Dtype::I8});
}

TEST_CASE("prefill, chunked prefill and decode agree with BF16 dense weights and FP8 experts") {
  check_variant({Dtype::BF16, Dtype::F8_E4M3});
}

TEST_CASE("a sequence longer than max_context is refused with a clear error") {
  const Config c = test::tiny_config();
  test::TinyModel tm(c, {}, 1);
  cpu::ThreadPool pool(1);
  Model m(c, tm.weights(), tm.layout(), &tm.experts(), pool, ModelOptions{16, 8});
  const auto ids = prompt(17, c.vocab_size);
  std::vector<float> logits(c.vocab_size);
  CHECK_THROWS_WITH_AS(m.forward(ids.data(), 17, logits.data(), false), doctest::Contains("exceed max_context 16"),
                       std::length_error);
  CHECK_THROWS_AS(m.forward(std::vector<int32_t>{int32_t(c.vocab_size)}.data(), 1, logits.data(), false),
                  std::out_of_range);
}

TEST_CASE("a weight of the wrong shape is named in the error") {
  const Config c = test::tiny_config();
  test::TinyModel tm(c, {}, 1);
  Weights w = tm.weights();
  w.layers[3].wq_b.shape = {7, 7};
  w.layers[3].wq_b.name = "model.layers.3.attn.wq_b.weight";
  cpu::ThreadPool pool(1);
  CHECK_THROWS_WITH_AS(Model(c, w, tm.layout(), &tm.experts(), pool),
                       doctest::Contains("model.layers.3.attn.wq_b.weight: has shape [7, 7], expected [128, 32]"),
                       std::invalid_argument);
  Weights missing = tm.weights();
  missing.layers[2].indexer_wq_b = {};
  CHECK_THROWS_WITH_AS(Model(c, missing, tm.layout(), &tm.experts(), pool),
                       doctest::Contains("layers.2.attn.indexer.wq_b: missing"), std::invalid_argument);
}
