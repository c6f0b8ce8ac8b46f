// The expert catalog: segments match the tensors, slots align parts to 64 bytes, the ABI view is
// consistent, and `inspect` reports what a budget buys.
#include <doctest/doctest.h>

#include <algorithm>

#include "deepseek4/model/catalog.hpp"
#include "deepseek4/model/config_json.hpp"
#include "deepseek4/model/inspect.hpp"
#include "support/temp_dir.hpp"
#include "synth_fixture.hpp"

using namespace moepage;
using namespace moepage::ds4;
using moepage::test::TempDir;

TEST_CASE("the FP4 expert catalog holds six parts per expert whose segments are the tensors' bytes") {
  TempDir dir("catalog-fp4");
  synthesize(moepage::testing::tiny_options(dir / "m"));
  const Config c = load_config_json(dir / "m").config;
  const auto ck = ckpt::Checkpoint::open(dir / "m");
  const TensorResolver r(ck);
  const auto cat = ExpertCatalog::build(r, c);
  CHECK(cat->part_names() == std::vector<std::string>{"w1", "w1.scale", "w3", "w3.scale", "w2", "w2.scale"});
  // w1/w3: [64, 128] FP4 = 64 x 64 bytes + 64 x 4 scales; w2: [128, 64] = 128 x 32 + 128 x 2.
  CHECK(cat->part_bytes() == std::vector<uint64_t>{4096, 256, 4096, 256, 4096, 256});
  // In the slot the parts follow the file's order (scale before weight; w1, w2, w3), so each
  // expert is one run of bytes in both: w1.scale at 0, w1 at 256, w2.scale at 4352, w2 at 4608,
  // w3.scale at 8704, w3 at 8960.
  CHECK(cat->part_offsets() == std::vector<uint64_t>{256, 0, 8960, 8704, 4608, 4352});
  CHECK(cat->expert_bytes() == 13056);
  CHECK(cat->layers_with_experts() == 4);

  int mismatched = 0;
  std::vector<uint8_t> buf;
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    for (uint32_t e = 0; e < c.n_routed_experts; ++e) {
      for (uint32_t p = 0; p < cat->n_parts(); ++p) {
        const ExpertSegment& s = cat->segment(l, e, p);
        const std::string name = layer_prefix(l) + "ffn.experts." + std::to_string(e) + "." + cat->part_names()[p] +
                                 (p % 2 == 0 ? ".weight" : "");
        const ckpt::TensorInfo& t = ck.at(name);
        if (s.file != t.file_index || s.offset != t.offset || s.length != t.nbytes || s.dtype != t.dtype) ++mismatched;
        // What a transport would pread is what the mapping holds.
        buf.resize(s.length);
        ckpt::MappedFile f(cat->files()[s.file]);
        f.pread_exact(s.offset, buf);
        const auto v = ck.view(t);
        if (!std::equal(buf.begin(), buf.end(), v.begin(), v.end())) ++mismatched;
      }
    }
  }
  CHECK(mismatched == 0);

  // Every expert of every layer is one run in its file whose bytes land as one run in its slot: a
  // transport that merges reads continuing each other moves it with one copy.
  std::vector<uint32_t> by_slot(cat->n_parts());
  for (uint32_t p = 0; p < cat->n_parts(); ++p) by_slot[p] = p;
  std::sort(by_slot.begin(), by_slot.end(),
            [&](uint32_t x, uint32_t y) { return cat->part_offsets()[x] < cat->part_offsets()[y]; });
  int broken_runs = 0;
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l)
    for (uint32_t e = 0; e < c.n_routed_experts; ++e)
      for (size_t i = 1; i < by_slot.size(); ++i) {
        const ExpertSegment &prev = cat->segment(l, e, by_slot[i - 1]), &next = cat->segment(l, e, by_slot[i]);
        if (next.file != prev.file || next.offset != prev.offset + prev.length ||
            cat->part_offsets()[by_slot[i]] != cat->part_offsets()[by_slot[i - 1]] + prev.length)
          ++broken_runs;
      }
  CHECK(broken_runs == 0);

  const mp_expert_catalog& a = cat->abi();
  CHECK(a.struct_size == sizeof(mp_expert_catalog));
  CHECK(a.n_layers == 4);
  CHECK(a.n_experts == 8);
  CHECK(a.n_parts == 6);
  CHECK(a.top_k == c.num_experts_per_tok);
  CHECK(a.expert_bytes == 13056);
  CHECK(a.d_model == 128);
  CHECK(std::string(a.part_names[3]) == "w3.scale");
  CHECK(a.part_offset[5] == 4352);
  CHECK(a.n_files == ck.files().size());
  const mp_expert_segment& seg = a.segments[(2 * a.n_experts + 5) * a.n_parts + 4];  // layer 2, expert 5, w2
  CHECK(seg.struct_size == sizeof(mp_expert_segment));
  CHECK(seg.offset == ck.at("layers.2.ffn.experts.5.w2.weight").offset);
  CHECK(std::string(a.files[seg.file]) == ck.at("layers.2.ffn.experts.5.w2.weight").file_path.string());
  for (uint32_t l = 0; l < 4; ++l) {
    CHECK(a.has_experts[l] == 1);
    CHECK(a.hash_routed[l] == (l < 3 ? 1 : 0));
  }
}

TEST_CASE("a BF16 expert has three parts and FP8 expert parts start on 64-byte boundaries") {
  TempDir dir("catalog-formats");
  auto o = moepage::testing::tiny_options(dir / "bf16");
  o.expert_format = WeightFormat::Bf16;
  synthesize(o);
  o.out = dir / "fp8";
  o.expert_format = WeightFormat::Fp8;
  synthesize(o);
  const Config c = load_config_json(dir / "bf16").config;
  const auto ck16 = ckpt::Checkpoint::open(dir / "bf16");
  const auto cat16 = ExpertCatalog::build(TensorResolver(ck16), c);
  CHECK(cat16->part_names() == std::vector<std::string>{"w1", "w3", "w2"});
  CHECK(cat16->expert_bytes() == 3 * 64 * 128 * 2);
  const auto ck8 = ckpt::Checkpoint::open(dir / "fp8");
  const auto cat8 = ExpertCatalog::build(TensorResolver(ck8), c);
  // w1 [64, 128] FP8 = 8192 bytes, its scale [1, 1] = 1 byte, padded to 64.
  CHECK(cat8->part_bytes() == std::vector<uint64_t>{8192, 1, 8192, 1, 8192, 1});
  // In file order (w1.scale, w1, w2.scale, w2, w3.scale, w3), each part on a 64-byte boundary.
  CHECK(cat8->part_offsets() == std::vector<uint64_t>{64, 0, 16576, 16512, 8320, 8256});
  CHECK(cat8->expert_bytes() == 24768);
  CHECK(cat8->expert_file_bytes() == 3 * 8193);
}

TEST_CASE("an expert lacking a scale the others have is an error naming the file and tensor") {
  const moepage::testing::TinyCheckpoint tiny("catalog-inconsistent");
  const auto cut =
      tiny.cut([](const std::string& n) { return n == "layers.1.ffn.experts.5.w2.scale" ? std::string() : n; });
  CHECK_THROWS_WITH_AS(ExpertCatalog::build(TensorResolver(cut), tiny.config),
                       ((tiny.dir / "cut" / "model.safetensors").string() +
                        ": tensor 'layers.1.ffn.experts.5.w2.weight' has no scale sidecar, unlike expert 0 of layer 0")
                           .c_str(),
                       ckpt::CheckpointError);
}

TEST_CASE("inspect reports bytes per expert and what a budget buys, saying when it is below top-k") {
  TempDir dir("inspect");
  synthesize(moepage::testing::tiny_options(dir / "m"));
  // 4 layers x 13,056 bytes per slot = 52,224 bytes per slot across layers.
  const std::string mid = inspect_report(dir / "m", 52224 * 5);
  CHECK(mid.find("bytes per expert   13,056 (12.75 KiB)") != std::string::npos);
  CHECK(mid.find("slots per layer    5 of 8") != std::string::npos);
  CHECK(mid.find("layers.0.ffn.experts.{*}.w1.weight") != std::string::npos);
  CHECK(mid.find("consistent") != std::string::npos);
  CHECK(mid.find("3      heavily_compressed_attention   16     moe") != std::string::npos);
  const std::string low = inspect_report(dir / "m", 52224 * 3);
  CHECK(low.find("below top-k: 3 slots cannot hold the 4 experts a token uses; the minimum budget is 208,896 bytes") !=
        std::string::npos);
  const std::string all = inspect_report(dir / "m", 1ull << 30);
  CHECK(all.find("every expert fits: one slot per expert, nothing evicted") != std::string::npos);
}
