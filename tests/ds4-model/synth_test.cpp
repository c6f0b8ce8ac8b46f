// `moepage synth`: deterministic per seed, released-style config, sane value scales, routing that
// is not degenerate, and the Flash expert size.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <stdexcept>

#include "checkpoint/dequantize.hpp"
#include "deepseek4/model/config_json.hpp"
#include "deepseek4/model/inspect.hpp"
#include "deepseek4/model/synth_tensors.hpp"
#include "deepseek4/model/tensor_names.hpp"
#include "support/temp_dir.hpp"
#include "synth_fixture.hpp"

using namespace moepage;
using namespace moepage::ds4;
using moepage::test::read_file_bytes;
using moepage::test::TempDir;

namespace {

double stddev(const std::vector<float>& v) {
  double s = 0, s2 = 0;
  for (float x : v) {
    s += x;
    s2 += double(x) * x;
  }
  const double m = s / double(v.size());
  return std::sqrt(s2 / double(v.size()) - m * m);
}

}  // namespace

TEST_CASE("synth with the same seed writes the same bytes and another seed different weights") {
  TempDir dir("synth-determinism");
  synthesize(moepage::testing::tiny_options(dir / "a", 5));
  synthesize(moepage::testing::tiny_options(dir / "b", 5));
  synthesize(moepage::testing::tiny_options(dir / "c", 6));
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "a")) {
    const std::string name = e.path().filename().string();
    CHECK_MESSAGE(read_file_bytes(e.path()) == read_file_bytes(dir / "b" / name), name);
    if (e.path().extension() == ".safetensors")
      CHECK_MESSAGE(read_file_bytes(e.path()) != read_file_bytes(dir / "c" / name), name);
    ++files;
  }
  CHECK(files == 5 + 3);  // 5 shards (globals + 4 layers), index, config.json, generation_config.json
}

TEST_CASE("synth writes a released-style config.json that parses back to the planned geometry") {
  TempDir dir("synth-config");
  auto o = moepage::testing::tiny_options(dir / "m");
  o.layers = 6;
  synthesize(o);
  const auto text = read_file_bytes(dir / "m" / "config.json");
  const std::string json(text.begin(), text.end());
  for (const char* key : {"\"compress_ratios\"", "\"num_hash_layers\"", "\"rope_scaling\"", "\"qk_rope_head_dim\"",
                          "\"quantization_config\"", "\"compress_rate_hca\": 16"}) {
    CHECK_MESSAGE(json.find(key) != std::string::npos, key);
  }
  const Config c = load_config_json(dir / "m").config;
  const Config planned = synth_plan(o).config;
  CHECK(c.layer_types == planned.layer_types);
  CHECK(c.layer_types == std::vector<AttnKind>{AttnKind::Sliding, AttnKind::Sliding, AttnKind::CSA, AttnKind::HCA,
                                               AttnKind::CSA, AttnKind::HCA});
  CHECK(c.mlp_layer_types == planned.mlp_layer_types);
  CHECK(c.compress_rate_hca == 16);
  CHECK(c.qk_rope_head_dim == 16);
  CHECK(c.hc_mult == 4);
  CHECK(c.n_routed_experts == 8);
  CHECK(c.rope_compress.yarn);
  CHECK(std::filesystem::exists(dir / "m" / "generation_config.json"));
}

TEST_CASE(
    "synthesized routing is not degenerate: distinct valid tid2eid rows, nonzero gate bias, varied router weights") {
  TempDir dir("synth-routing");
  synthesize(moepage::testing::tiny_options(dir / "m", 3));
  const Config c = load_config_json(dir / "m").config;
  const auto ck = ckpt::Checkpoint::open(dir / "m");
  const auto& tid = ck.at("layers.0.ffn.gate.tid2eid");
  REQUIRE(tid.shape == std::vector<uint64_t>{c.vocab_size, c.num_experts_per_tok});
  const auto v = ck.view(tid);
  std::set<std::vector<int64_t>> rows;
  bool all_valid = true, all_distinct = true;
  for (uint64_t r = 0; r < c.vocab_size; ++r) {
    std::vector<int64_t> row(c.num_experts_per_tok);
    std::memcpy(row.data(), v.data() + r * c.num_experts_per_tok * 8, c.num_experts_per_tok * 8);
    const std::set<int64_t> uniq(row.begin(), row.end());
    all_distinct &= uniq.size() == row.size();
    for (int64_t e : row) all_valid &= e >= 0 && e < int64_t(c.n_routed_experts);
    rows.insert(row);
  }
  CHECK(all_valid);
  CHECK(all_distinct);
  CHECK(rows.size() > c.vocab_size / 4);
  // Layers 0 and 1 get different tables.
  CHECK(std::vector<uint8_t>(v.begin(), v.end()) != [&] {
    const auto w = ck.view("layers.1.ffn.gate.tid2eid");
    return std::vector<uint8_t>(w.begin(), w.end());
  }());

  const auto bias = ckpt::dequantize_tensor(ck, "layers.3.ffn.gate.bias").values;
  for (float b : bias) CHECK(b != 0.0f);
  const auto gate = ckpt::dequantize_tensor(ck, "layers.3.ffn.gate.weight").values;
  CHECK(stddev(gate) == doctest::Approx(1.0 / std::sqrt(double(c.hidden_size))).epsilon(0.1));
}

TEST_CASE("synthesized weights have std 1/sqrt(fan_in) so activations stay O(1) through depth") {
  TempDir dir("synth-scale");
  for (const char* fmt : {"fp4", "fp8", "bf16"}) {
    auto o = moepage::testing::tiny_options(dir / fmt);
    o.expert_format = weight_format_from_name(fmt);
    o.dense_format = WeightFormat::Fp8;
    synthesize(o);
    const Config c = load_config_json(dir / fmt).config;
    const auto ck = ckpt::Checkpoint::open(dir / fmt);
    TensorResolver(ck).check_required(c);
    const double w1 = stddev(ckpt::dequantize_tensor(ck, "layers.1.ffn.experts.2.w1.weight").values);
    const double w2 = stddev(ckpt::dequantize_tensor(ck, "layers.1.ffn.experts.2.w2.weight").values);
    const double wq = stddev(ckpt::dequantize_tensor(ck, "layers.1.attn.wq_b.weight").values);
    CHECK_MESSAGE(w1 == doctest::Approx(1.0 / std::sqrt(double(c.hidden_size))).epsilon(0.25), fmt);
    CHECK_MESSAGE(w2 == doctest::Approx(1.0 / std::sqrt(double(c.moe_intermediate_size))).epsilon(0.25), fmt);
    CHECK_MESSAGE(wq == doctest::Approx(1.0 / std::sqrt(double(c.q_lora_rank))).epsilon(0.15), fmt);
  }
}

TEST_CASE(
    "the flash preset's FP4 expert is 13,369,344 bytes: w1 and w3 2048x2048 I8 + 2048x128 e8m0, w2 4096x1024 + "
    "4096x64") {
  SynthOptions o;
  o.preset = "flash";
  o.layers = 1;
  const SynthPlan plan = synth_plan(o);
  CHECK(plan.config.hidden_size == 4096);
  CHECK(plan.config.n_routed_experts == 256);
  uint64_t bytes = 0;
  for (const auto& spec : expert_specs(plan.config, 0, 0)) {
    const SynthTensor t = plan_tensor(spec, plan, Spelling::Released);
    CHECK(t.weight.dtype == Dtype::I8);
    CHECK(t.scale.dtype == Dtype::F8_E8M0);
    bytes += stored_bytes(t);
  }
  CHECK(bytes == 13369344);
}

TEST_CASE("synth options out of range are refused with a message naming the option") {
  SynthOptions o;
  o.preset = "huge";
  CHECK_THROWS_WITH_AS(synth_plan(o), "unknown synth preset 'huge' (tiny, small or flash)", std::invalid_argument);
  o.preset = "tiny";
  o.layers = 0;
  CHECK_THROWS_WITH_AS(synth_plan(o), "--layers must be at least 1", std::invalid_argument);
  o.layers.reset();
  o.experts = 2;  // top-k follows the expert count down
  CHECK(synth_plan(o).config.num_experts_per_tok == 2);
}
