// A corpus of broken checkpoints, generated here: each gives one line that names the file (and the
// tensor when there is one) and says what is wrong.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <utility>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "checkpoint/shard_index.hpp"
#include "safetensors_bytes.hpp"
#include "support/temp_dir.hpp"

using namespace moepage;
using namespace moepage::ckpt;
using moepage::test::TempDir;
using moepage::test::write_file;
using moepage::testing::safetensors_bytes;

namespace {

// The message of the error opening `path` gives; fails the test when it opens.
std::string open_error(const std::filesystem::path& path) {
  try {
    Checkpoint::open(path);
  } catch (const CheckpointError& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find('\n') == std::string::npos, "error spans lines: " << msg);
    return msg;
  }
  FAIL("opening " << path << " succeeded");
  return {};
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t b, uint64_t e) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(b) + "," + std::to_string(e) + "]}";
}

const std::vector<uint8_t> kData(64, 0x11);

}  // namespace

TEST_CASE("a truncated file gives an error naming the file and the tensor past the end") {
  TempDir dir("broken-truncated");
  const auto full = safetensors_bytes("{" + entry("w", "F32", "[4,4]", 0, 64) + "}", kData);
  write_file(dir / "cut.safetensors", std::vector<uint8_t>(full.begin(), full.end() - 20));
  const std::string msg = open_error(dir / "cut.safetensors");
  CHECK(msg.find((dir / "cut.safetensors").string()) == 0);
  CHECK(msg.find("tensor 'w'") != std::string::npos);
  CHECK(msg.find("outside the data region of 44 bytes") != std::string::npos);

  write_file(dir / "stub.safetensors", {1, 2, 3});
  CHECK(open_error(dir / "stub.safetensors").find("shorter than the 8-byte safetensors header length") !=
        std::string::npos);
}

TEST_CASE("a header length beyond the file gives an error naming the file") {
  TempDir dir("broken-header-length");
  auto bytes = safetensors_bytes("{" + entry("w", "F32", "[4,4]", 0, 64) + "}", kData);
  bytes[5] = 0x7F;  // a header length of ~2^47 bytes
  write_file(dir / "big.safetensors", bytes);
  const std::string msg = open_error(dir / "big.safetensors");
  CHECK(msg.find((dir / "big.safetensors").string()) == 0);
  CHECK(msg.find("runs past the end of the file") != std::string::npos);
}

TEST_CASE("malformed JSON in a header gives an error naming the file") {
  TempDir dir("broken-json");
  write_file(dir / "bad.safetensors", safetensors_bytes("{\"w\":{\"dtype\":", kData));
  CHECK(open_error(dir / "bad.safetensors") ==
        (dir / "bad.safetensors").string() + ": malformed JSON in the safetensors header");
}

TEST_CASE("overlapping tensors give an error naming both tensors") {
  TempDir dir("broken-overlap");
  write_file(
      dir / "o.safetensors",
      safetensors_bytes("{" + entry("a", "F32", "[8]", 0, 32) + "," + entry("b", "F32", "[8]", 16, 48) + "}", kData));
  const std::string msg = open_error(dir / "o.safetensors");
  CHECK(msg.find((dir / "o.safetensors").string() + ": tensor 'b'") == 0);
  CHECK(msg.find("overlap tensor 'a' [0, 32]") != std::string::npos);
}

TEST_CASE("an unknown dtype gives an error naming the tensor and the dtype") {
  TempDir dir("broken-dtype");
  write_file(dir / "d.safetensors", safetensors_bytes("{" + entry("w", "F7", "[4]", 0, 4) + "}", kData));
  CHECK(open_error(dir / "d.safetensors") == (dir / "d.safetensors").string() + ": tensor 'w': unknown dtype \"F7\"");
}

TEST_CASE("a shape that does not match the byte span gives an error naming the tensor") {
  TempDir dir("broken-shape");
  write_file(dir / "s.safetensors", safetensors_bytes("{" + entry("w", "BF16", "[3,4]", 0, 20) + "}", kData));
  CHECK(open_error(dir / "s.safetensors") ==
        (dir / "s.safetensors").string() + ": tensor 'w': shape [3, 4] x BF16 is 24 bytes but data_offsets span 20");
}

TEST_CASE("negative or non-integer offsets give an error naming the tensor") {
  TempDir dir("broken-offsets");
  write_file(dir / "n.safetensors",
             safetensors_bytes(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[-4,0]}})", kData));
  CHECK(open_error(dir / "n.safetensors").find("tensor 'w': data_offsets must hold non-negative integers") !=
        std::string::npos);
}

namespace {

// Two shards, each with one tensor, and an index for them.
// A folder with two one-tensor shards, a.safetensors (a.weight) and b.safetensors (b.weight).
struct TwoShards : TempDir {
  explicit TwoShards(const std::string& tag) : TempDir(tag) {
    for (const char* name : {"a", "b"}) {
      SafetensorsWriter w(*this / (std::string(name) + ".safetensors"));
      w.declare(std::string(name) + ".weight", Dtype::U8, {4});
      w.begin();
      w.write(std::string(name) + ".weight", std::vector<uint8_t>(4, 1));
      w.finish();
    }
  }

  // The error opening the folder once its index maps tensors to shards as `weight_map`.
  std::string error_with_index(const std::map<std::string, std::string>& weight_map) const {
    write_file(*this / kIndexFileName, shard_index_json(weight_map, 8));
    return open_error(path());
  }
};

}  // namespace

TEST_CASE("an index naming a missing shard gives an error naming the index and the shard") {
  const TwoShards dir("broken-missing-shard");
  const std::string msg = dir.error_with_index({{"a.weight", "a.safetensors"}, {"c.weight", "c.safetensors"}});
  CHECK(msg.find((dir / kIndexFileName).string()) == 0);
  CHECK(msg.find("names shard 'c.safetensors' (for tensor 'c.weight'), which does not exist") != std::string::npos);
}

TEST_CASE("an index that disagrees with a shard's tensors gives an error naming the shard and the tensor") {
  const TwoShards dir("broken-disagree");
  // A weight_map, and what the error says after "<folder>/b.safetensors: ".
  const std::pair<std::map<std::string, std::string>, std::string> cases[] = {
      {{{"a.weight", "a.safetensors"}, {"b.weight", "b.safetensors"}, {"x.weight", "b.safetensors"}},
       "tensor 'x.weight' named by model.safetensors.index.json is absent from this file"},
      {{{"a.weight", "a.safetensors"}, {"b.weight", "a.safetensors"}, {"x.weight", "b.safetensors"}},
       "tensor 'b.weight' is mapped by model.safetensors.index.json to 'a.safetensors'"},
      {{{"a.weight", "a.safetensors"}, {"x.weight", "b.safetensors"}},
       "tensor 'b.weight' is not listed in model.safetensors.index.json"},
  };
  for (const auto& c : cases)
    CHECK(dir.error_with_index(c.first) == (dir / "b.safetensors").string() + ": " + c.second);
}

TEST_CASE("a tensor stored in two shards gives an error naming both files") {
  const TwoShards dir("broken-two-shards");
  {
    SafetensorsWriter w(dir / "c.safetensors");
    w.declare("a.weight", Dtype::U8, {4});
    w.begin();
    w.write("a.weight", std::vector<uint8_t>(4, 2));
    w.finish();
  }
  // Without an index every *.safetensors file is read.
  const std::string msg = open_error(dir.path());
  CHECK(msg.find("tensor 'a.weight' is also in " + (dir / "a.safetensors").string()) != std::string::npos);
  CHECK(msg.find((dir / "c.safetensors").string()) == 0);
}

TEST_CASE("an index with malformed JSON or a path outside the folder is refused") {
  const TwoShards dir("broken-index");
  write_file(dir / kIndexFileName, "{\"weight_map\": {\"a.weight\": ");
  CHECK(open_error(dir.path()) == (dir / kIndexFileName).string() + ": malformed JSON");
  write_file(dir / kIndexFileName, R"({"weight_map": {"a.weight": "../a.safetensors"}})");
  CHECK(open_error(dir.path()).find("maps tensor 'a.weight' to '../a.safetensors', which is not a plain file name") !=
        std::string::npos);
}

TEST_CASE("an index whose weight_map is empty is refused naming the index") {
  const TwoShards dir("broken-empty-index");
  write_shard_index(dir.path(), {}, 0);
  CHECK(open_error(dir.path()) == (dir / kIndexFileName).string() + ": weight_map names no tensors");
}

TEST_CASE("a folder without safetensors files gives an error naming the folder") {
  TempDir dir("broken-empty");
  CHECK(open_error(dir.path()).find(dir.path().string() + ": no model.safetensors.index.json") == 0);
}
