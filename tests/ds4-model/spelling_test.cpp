// Both tensor spellings load: the released one and save_pretrained's `model.`-prefixed one, sharded
// or in one file, with FP8 dense weights and FP4 experts, to identical dequantized tensors.
#include <doctest/doctest.h>

#include "checkpoint/dequantize.hpp"
#include "deepseek4/model/config_json.hpp"
#include "deepseek4/model/tensor_names.hpp"
#include "support/temp_dir.hpp"
#include "synth_fixture.hpp"

using namespace moepage;
using namespace moepage::ds4;
using moepage::test::TempDir;

namespace {

std::vector<std::string> logical_names(const Config& c) {
  std::vector<std::string> names;
  for (const auto& s : global_tensor_specs(c)) names.push_back(s.name);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    for (const auto& s : layer_dense_specs(c, l)) names.push_back(s.name);
    for (uint32_t e = 0; e < c.n_routed_experts; ++e) {
      for (const auto& s : expert_specs(c, l, e)) names.push_back(s.name);
    }
  }
  return names;
}

// Floats of a tensor whatever its storage: float types and FP8/FP4 dequantized; I64 as doubles.
std::vector<double> values_of(const TensorResolver& r, const std::string& released) {
  const ckpt::TensorInfo& t = r.require(released);
  std::vector<double> out;
  if (t.dtype == Dtype::I64) {
    const auto v = r.checkpoint().view(t);
    for (size_t i = 0; i < v.size(); i += 8) {
      int64_t x;
      std::memcpy(&x, v.data() + i, 8);
      out.push_back(double(x));
    }
    return out;
  }
  const auto f = ckpt::dequantize_tensor(r.checkpoint(), t.name);
  out.assign(f.values.begin(), f.values.end());
  return out;
}

}  // namespace

TEST_CASE(
    "a checkpoint in each spelling, sharded with FP8 and FP4 tensors or in one file, reads back identical tensors") {
  TempDir dir("spellings");
  auto released_opts = moepage::testing::tiny_options(dir / "released", 42);
  released_opts.dense_format = WeightFormat::Fp8;
  released_opts.expert_format = WeightFormat::Fp4;
  synthesize(released_opts);
  auto hf_opts = released_opts;
  hf_opts.out = dir / "hf";
  hf_opts.spelling = Spelling::SavePretrained;
  synthesize(hf_opts);

  const Config c = load_config_json(dir / "released").config;
  const auto ck_rel = ckpt::Checkpoint::open(dir / "released");
  const auto ck_hf = ckpt::Checkpoint::open(dir / "hf");
  CHECK(ck_rel.sharded());
  CHECK(ck_rel.at("layers.0.attn.wq_a.weight").dtype == Dtype::F8_E4M3);
  CHECK(ck_rel.at("layers.0.ffn.experts.0.w1.weight").dtype == Dtype::I8);
  // save_pretrained names as transformers writes them.
  CHECK(ck_hf.find("model.embed_tokens.weight") != nullptr);
  CHECK(ck_hf.find("model.hc_head.hc_fn") != nullptr);
  CHECK(ck_hf.find("model.norm.weight") != nullptr);
  CHECK(ck_hf.find("head.weight") != nullptr);
  CHECK(ck_hf.find("model.layers.0.attn.norm.weight") != nullptr);
  CHECK(ck_hf.find("model.layers.0.attn.wq_a.scale") != nullptr);
  CHECK(ck_hf.find("model.layers.2.attn.indexer.compressor.ape") != nullptr);
  CHECK(ck_hf.find("model.layers.0.ffn.gate.tid2eid") != nullptr);
  CHECK(ck_hf.find("model.layers.3.ffn.gate.bias") != nullptr);
  CHECK(ck_hf.find("layers.0.attn.wq_a.weight") == nullptr);

  // The save_pretrained copy again, as a single model.safetensors.
  moepage::testing::rewrite_single_file(ck_hf, dir / "single", [](const std::string& n) { return n; });
  const auto ck_single = ckpt::Checkpoint::open(dir / "single");
  CHECK_FALSE(ck_single.sharded());

  const TensorResolver rel(ck_rel), hf(ck_hf), single(ck_single);
  CHECK(rel.spelling() == Spelling::Released);
  CHECK(hf.spelling() == Spelling::SavePretrained);
  CHECK(single.spelling() == Spelling::SavePretrained);
  rel.check_required(c);
  hf.check_required(c);
  single.check_required(c);
  int differing = 0, compared = 0;
  for (const auto& name : logical_names(c)) {
    const auto a = values_of(rel, name);
    if (a != values_of(hf, name) || a != values_of(single, name)) {
      ++differing;
      MESSAGE("differs: " << name);
    }
    ++compared;
  }
  CHECK(compared > 100);
  CHECK(differing == 0);
}

TEST_CASE("a missing required tensor is an error naming the checkpoint and the expected tensor name") {
  const moepage::testing::TinyCheckpoint tiny("missing-required");
  // save_pretrained spelling without layer 3's gate bias (required: layer 3 is score-routed).
  const auto cut = tiny.cut([](const std::string& n) {
    if (n == "layers.3.ffn.gate.bias") return std::string();
    return n == "head.weight" ? n : spell(n, Spelling::SavePretrained);
  });
  const TensorResolver r(cut);
  CHECK_THROWS_WITH_AS(
      r.check_required(tiny.config),
      ((tiny.dir / "cut").string() +
       ": missing tensor 'model.layers.3.ffn.gate.bias' required by the configured geometry (save_pretrained spelling)")
          .c_str(),
      ckpt::CheckpointError);
}

TEST_CASE("a tensor whose stored shape does not fit the config is an error naming the file and the tensor") {
  TempDir dir("wrong-shape");
  synthesize(moepage::testing::tiny_options(dir / "ck"));
  Config c = load_config_json(dir / "ck").config;
  c.q_lora_rank = 32;  // the files hold q_lora 64
  const auto ck = ckpt::Checkpoint::open(dir / "ck");
  const TensorResolver r(ck);
  try {
    r.check_required(c);
    FAIL("check_required accepted a mismatched geometry");
  } catch (const ckpt::CheckpointError& e) {
    const std::string msg = e.what();
    CHECK(msg == ck.at("layers.0.attn.wq_a.weight").file_path.string() +
                     ": tensor 'layers.0.attn.wq_a.weight': is BF16 [64, 128], expected [32, 128]");
  }
}

TEST_CASE("released names map to save_pretrained names with the renamed globals and KV norm") {
  CHECK(spell("embed.weight", Spelling::SavePretrained) == "model.embed_tokens.weight");
  CHECK(spell("hc_head_fn", Spelling::SavePretrained) == "model.hc_head.hc_fn");
  CHECK(spell("hc_head_scale", Spelling::SavePretrained) == "model.hc_head.hc_scale");
  CHECK(spell("norm.weight", Spelling::SavePretrained) == "model.norm.weight");
  CHECK(spell("head.weight", Spelling::SavePretrained) == "head.weight");
  CHECK(spelling_candidates("head.weight", Spelling::SavePretrained)[1] == "lm_head.weight");
  CHECK(spell("layers.7.attn.kv_norm.weight", Spelling::SavePretrained) == "model.layers.7.attn.norm.weight");
  CHECK(spell("layers.7.attn.compressor.norm.weight", Spelling::SavePretrained) ==
        "model.layers.7.attn.compressor.norm.weight");
  CHECK(spell("layers.7.ffn.experts.3.w1.scale", Spelling::SavePretrained) == "model.layers.7.ffn.experts.3.w1.scale");
  CHECK(spell("layers.7.attn.kv_norm.weight", Spelling::Released) == "layers.7.attn.kv_norm.weight");
}
