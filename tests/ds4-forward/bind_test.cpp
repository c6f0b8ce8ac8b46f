// A synthesized checkpoint (moepage synth, `tiny` preset) bound to the forward pass in both
// tensor-name spellings: the same weights must give the same logits, and decode must agree with
// prefill on the bound model as it does on the in-memory one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "deepseek4/forward/bind_weights.hpp"
#include "deepseek4/forward/model.hpp"
#include "deepseek4/model/config_json.hpp"
#include "deepseek4/model/synth.hpp"
#include "support/temp_dir.hpp"

using namespace moepage;
using namespace moepage::ds4;
namespace fs = std::filesystem;

namespace {

fs::path synth(const moepage::test::TempDir& dir, Spelling spelling) {
  SynthOptions o;
  o.preset = "tiny";
  o.seed = 21;
  o.spelling = spelling;
  o.out = dir / "model";
  o.progress = false;
  synthesize(o);
  return o.out;
}

// Logits of every position: whole prompt, or one token at a time.
std::vector<float> run(const fs::path& dir, const std::vector<int32_t>& ids, bool one_by_one) {
  const Config cfg = load_config_json(dir).config;
  const ckpt::Checkpoint ck = ckpt::Checkpoint::open(dir);
  const TensorResolver resolver(ck);
  const auto catalog = ExpertCatalog::build(resolver, cfg);
  auto experts = load_resident_experts(resolver, *catalog, cfg);
  cpu::ThreadPool pool(2);
  Model m(cfg, bind_weights(resolver, cfg), expert_layout(*catalog, cfg), experts.get(), pool,
          ModelOptions{uint32_t(ids.size()), 32});
  const size_t V = cfg.vocab_size;
  std::vector<float> logits(ids.size() * V);
  if (one_by_one) {
    for (size_t i = 0; i < ids.size(); ++i) m.forward(&ids[i], 1, logits.data() + i * V, true);
  } else {
    m.forward(ids.data(), uint32_t(ids.size()), logits.data(), true);
  }
  return logits;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

}  // namespace

TEST_CASE("a synthesized checkpoint binds in both spellings and decodes like it prefills") {
  const moepage::test::TempDir released_dir("ds4-bind-released"), saved_dir("ds4-bind-save-pretrained");
  const fs::path released = synth(released_dir, Spelling::Released);
  const fs::path saved = synth(saved_dir, Spelling::SavePretrained);
  std::vector<int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back((i * 131 + 7) % 1000);  // tiny: window 16, CSA 4, HCA 16
  const auto whole = run(released, ids, false);
  REQUIRE(std::all_of(whole.begin(), whole.end(), [](float x) { return std::isfinite(x); }));
  CHECK(max_abs_diff(whole, run(released, ids, true)) < 1e-4);
  CHECK(max_abs_diff(whole, run(saved, ids, false)) < 1e-6);
}
