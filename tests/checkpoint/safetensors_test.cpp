// The writer and reader agree: streamed files read back byte for byte, single-file and sharded.
#include <doctest/doctest.h>

#include <numeric>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/safetensors_header.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "checkpoint/shard_index.hpp"
#include "safetensors_bytes.hpp"
#include "support/temp_dir.hpp"

using namespace moepage;
using namespace moepage::ckpt;
using moepage::test::TempDir;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7);
  return v;
}

}  // namespace

TEST_CASE("a streamed safetensors file reads back byte for byte with 8-byte aligned data") {
  TempDir dir("st-roundtrip");
  const auto a = pattern(3 * 5 * 4, 1), b = pattern(7 * 2, 9), c = pattern(16 * 8, 3);
  {
    SafetensorsWriter w(dir / "model.safetensors");
    w.declare("zeta.weight", Dtype::F32, {3, 5});
    w.declare("alpha.weight", Dtype::BF16, {7});
    w.declare("mid.tid2eid", Dtype::I64, {16});
    w.declare("empty", Dtype::F32, {0, 4});
    w.set_metadata("format", "pt");
    w.begin();
    // Out of name order and in pieces: each tensor has its own cursor.
    w.write("mid.tid2eid", std::span(c).first(40));
    w.write("zeta.weight", a);
    w.write("mid.tid2eid", std::span(c).subspan(40));
    w.write("alpha.weight", b);
    w.finish();
  }
  const Checkpoint ck = Checkpoint::open(dir.path());
  CHECK_FALSE(ck.sharded());
  REQUIRE(ck.tensors().size() == 4);
  CHECK(ck.tensors()[0].name == "alpha.weight");  // sorted
  const TensorInfo& z = ck.at("zeta.weight");
  CHECK(z.dtype == Dtype::F32);
  CHECK(z.shape == std::vector<uint64_t>{3, 5});
  CHECK(z.nbytes == a.size());
  const auto view = ck.view("zeta.weight");
  CHECK(std::vector<uint8_t>(view.begin(), view.end()) == a);
  const auto vb = ck.view("alpha.weight");
  CHECK(std::vector<uint8_t>(vb.begin(), vb.end()) == b);
  std::vector<uint8_t> read(c.size());
  ck.read(ck.at("mid.tid2eid"), read);
  CHECK(read == c);
  CHECK(ck.at("empty").nbytes == 0);
  // Data follows the header at an 8-byte boundary, in sorted-name order.
  CHECK(ck.at("alpha.weight").offset % 8 == 0);
  CHECK(ck.at("alpha.weight").offset < ck.at("mid.tid2eid").offset);
  CHECK(ck.at("mid.tid2eid").offset < ck.at("zeta.weight").offset);
  const ByteRange r = ck.byte_range("zeta.weight");
  CHECK(r.offset == z.offset);
  CHECK(r.length == a.size());
  CHECK(ck.find("nope") == nullptr);
}

TEST_CASE("a writer refuses a tensor written past its size or left incomplete") {
  TempDir dir("st-writer-errors");
  SafetensorsWriter w(dir / "x.safetensors");
  w.declare("t", Dtype::F32, {2});
  w.begin();
  CHECK_THROWS_WITH_AS(w.write("t", pattern(12, 0)),
                       doctest::Contains("tensor 't': 12 bytes written for a tensor of 8"), CheckpointError);
  CHECK_THROWS_WITH_AS(w.finish(), doctest::Contains("only 0 of 8 bytes"), CheckpointError);
  CHECK_THROWS_WITH_AS(w.write("u", pattern(4, 0)), doctest::Contains("'u' was not declared"), CheckpointError);
}

TEST_CASE("a sharded checkpoint with an index maps every tensor to its shard") {
  TempDir dir("st-sharded");
  std::map<std::string, std::string> weight_map;
  for (int s = 0; s < 3; ++s) {
    const std::string file = "model-0000" + std::to_string(s + 1) + "-of-00003.safetensors";
    SafetensorsWriter w(dir / file);
    for (int t = 0; t < 2; ++t) {
      const std::string name = "layers." + std::to_string(s) + ".t" + std::to_string(t);
      w.declare(name, Dtype::U8, {uint64_t(5 + t)});
      weight_map[name] = file;
    }
    w.begin();
    for (int t = 0; t < 2; ++t)
      w.write("layers." + std::to_string(s) + ".t" + std::to_string(t), pattern(size_t(5 + t), uint8_t(s * 10 + t)));
    w.finish();
  }
  moepage::test::write_file(dir / kIndexFileName, shard_index_json(weight_map, 33));
  const Checkpoint ck = Checkpoint::open(dir.path());
  CHECK(ck.sharded());
  CHECK(ck.files().size() == 3);
  CHECK(ck.tensors().size() == 6);
  const TensorInfo& t = ck.at("layers.2.t1");
  CHECK(t.file_path.filename() == "model-00003-of-00003.safetensors");
  CHECK(ck.files()[t.file_index] == t.file_path);
  const auto v = ck.view(t);
  CHECK(std::vector<uint8_t>(v.begin(), v.end()) == pattern(6, 21));
}

TEST_CASE("the header parser works on an in-memory buffer and reports metadata") {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F8_E4M3","shape":[2,2],"data_offsets":[0,4]}})";
  const auto bytes = moepage::testing::safetensors_bytes(header, pattern(4, 0));
  const SafetensorsHeader h = parse_safetensors_header(bytes, bytes.size(), "mem");
  CHECK(h.metadata.at("format") == "pt");
  REQUIRE(h.tensors.size() == 1);
  CHECK(h.tensors[0].dtype == Dtype::F8_E4M3);
  CHECK(h.data_start == 8 + header.size());
  CHECK(h.data_size == 4);
}
