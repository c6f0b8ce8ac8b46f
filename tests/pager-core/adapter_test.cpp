// HFADPT adapter files (v1, and v2 with a bias): round trip, every validation error, the scorer, and the f16 helpers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "dtype/dtype.hpp"
#include "moepage/pager_core/adapter_file.hpp"
#include "moepage/pager_core/adapter_scorer.hpp"
#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/half.hpp"
#include "support/temp_dir.hpp"

using namespace moepage::pager;

namespace {

// 5 layers, layer 0 and 1 dense (as in DeepSeek's first layers), 3 and 4 have experts, layer 2
// too: entries may predict layers 2, 3 and 4.
AdapterModel tiny_model() { return {.n_layers = 5, .d_model = 6, .n_experts = 4, .has_experts = {0, 0, 1, 1, 1}}; }

// Three layers of 4 experts over d_model 2: the scorer tests' model.
AdapterModel scorer_model() { return {.n_layers = 3, .d_model = 2, .n_experts = 4, .has_experts = {1, 1, 1}}; }

// One rank-2 entry after layer 1 for scorer_model():
// A = [[1, 0], [0, 2]]; B = [[1, 0], [0, 1], [1, 1], [-1, 0]] (all exact in f16).
Adapter scorer_adapter(uint32_t version) {
  auto halves = [](std::initializer_list<float> values) {
    std::vector<uint16_t> bits;
    for (float v : values) bits.push_back(float_to_half(v));
    return bits;
  };
  AdapterEntry e{.src_layer = 1, .a = halves({1, 0, 0, 2}), .b = halves({1, 0, 0, 1, 1, 1, -1, 0}), .bias = {}};
  return {.version = version, .d_model = 2, .n_experts = 4, .rank = 2, .entries = {e}};
}

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i));
}

std::string parse_error(const std::vector<uint8_t>& bytes, const AdapterModel& model = tiny_model()) {
  try {
    parse_adapter(bytes, model, "test.hfadpt");
  } catch (const PagerError& e) {
    CHECK(e.kind() == ErrorKind::Format);
    CHECK(e.status() == MP_ERR_IO);
    return e.what();
  }
  return "(no error)";
}

// Entry i starts at 28 + i * (4 + 2*rank*d_model + 2*n_exp*rank).
size_t entry_offset(const Adapter& a, size_t i) {
  return kAdapterHeaderBytes + i * (4 + 2 * size_t(a.rank) * a.d_model + 2 * size_t(a.n_experts) * a.rank);
}

}  // namespace

TEST_CASE("f16 conversion agrees with plugins/support/dtype on every half value and on rounding") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float mine = half_to_float(uint16_t(h)), theirs = moepage::f16_to_float(uint16_t(h));
    if (std::isnan(theirs)) {
      CHECK(std::isnan(mine));
      continue;
    }
    REQUIRE(std::memcmp(&mine, &theirs, sizeof mine) == 0);
    REQUIRE(float_to_half(mine) == h);  // every finite half round-trips exactly
  }
  uint64_t x = 1;
  for (int i = 0; i < 200000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const float f = moepage::bits_to_float(uint32_t(x >> 32));
    if (std::isnan(f)) continue;
    REQUIRE(float_to_half(f) == moepage::float_to_f16(f));
  }
}

TEST_CASE("a random adapter writes and reads back identically, through a file too") {
  const AdapterModel model = tiny_model();
  const Adapter a = random_adapter(model, 3, 42);
  REQUIRE(a.entries.size() == 3);  // layers 1, 2 and 3 predict 2, 3 and 4
  CHECK(a.entries[0].src_layer == 1);
  const std::vector<uint8_t> bytes = serialize_adapter(a);
  CHECK(bytes.size() == 220);  // 28 + 3 x (4 + 2x3x6 + 2x4x3)
  CHECK(std::memcmp(bytes.data(), "HFADPT\0\0", 8) == 0);
  const Adapter b = parse_adapter(bytes, model, "mem");
  CHECK(b.rank == 3);
  REQUIRE(b.entries.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(b.entries[i].src_layer == a.entries[i].src_layer);
    CHECK(b.entries[i].a == a.entries[i].a);
    CHECK(b.entries[i].b == a.entries[i].b);
  }
  CHECK(serialize_adapter(random_adapter(model, 3, 42)) == bytes);  // same seed, same bytes
  CHECK(serialize_adapter(random_adapter(model, 3, 43)) != bytes);

  const moepage::test::TempDir dir("pager-core");
  const std::string path = (dir / "roundtrip.hfadpt").string();
  write_adapter_file(path, a);
  const Adapter c = read_adapter_file(path, model);
  CHECK(serialize_adapter(c) == bytes);
  std::remove(path.c_str());
  CHECK_THROWS_WITH(read_adapter_file(path, model),
                    (path + ": cannot open the adapter file (No such file or directory)").c_str());
}

TEST_CASE("each HFADPT validation error names the file and what was expected") {
  const AdapterModel model = tiny_model();
  const Adapter a = random_adapter(model, 3, 7);
  const std::vector<uint8_t> good = serialize_adapter(a);
  auto with = [&](auto edit) {
    std::vector<uint8_t> b = good;
    edit(b);
    return parse_error(b);
  };

  CHECK(parse_error({'H', 'F'}) == "test.hfadpt: file is 2 bytes, shorter than the 28-byte HFADPT header");
  CHECK(with([](auto& b) { b[5] = 'X'; }) ==
        "test.hfadpt: not an HFADPT adapter file (the first 8 bytes are not \"HFADPT\\0\\0\")");
  CHECK(with([](auto& b) { put_u32(b, 8, 3); }) == "test.hfadpt: HFADPT version 3 is not supported (expected 1 or 2)");
  CHECK(with([](auto& b) { put_u32(b, 16, 8); }) == "test.hfadpt: d_model 8 does not match the model's hidden size 6");
  CHECK(with([](auto& b) { put_u32(b, 20, 5); }) ==
        "test.hfadpt: n_exp 5 does not match the model's 4 routed experts per layer");
  CHECK(with([](auto& b) { put_u32(b, 24, 0); }) == "test.hfadpt: rank 0 must be in 1..d_model (6)");
  CHECK(with([](auto& b) { put_u32(b, 24, 7); }) == "test.hfadpt: rank 7 must be in 1..d_model (6)");
  CHECK(with([](auto& b) { put_u32(b, 12, 0); }) == "test.hfadpt: has no entries");
  CHECK(with([](auto& b) { put_u32(b, 12, 5); }) ==
        "test.hfadpt: 5 entries, but a 5-layer model has at most 4 layers to predict");
  CHECK(with([](auto& b) { b.pop_back(); }) ==
        "test.hfadpt: file is 219 bytes but its header (3 entries, rank 3, d_model 6, 4 experts) needs exactly 220 "
        "bytes");
  CHECK(with([](auto& b) { b.push_back(0); }) ==
        "test.hfadpt: file is 221 bytes but its header (3 entries, rank 3, d_model 6, 4 experts) needs exactly 220 "
        "bytes");
  CHECK(with([](auto& b) { put_u32(b, 24, 2); }) ==
        "test.hfadpt: file is 220 bytes but its header (3 entries, rank 2, d_model 6, 4 experts) needs exactly 160 "
        "bytes");
  const size_t e1 = entry_offset(a, 1), e2 = entry_offset(a, 2);
  CHECK(with([&](auto& b) { put_u32(b, e1, 4); }) ==
        "test.hfadpt: entry 1: src_layer 4 predicts layer 5, beyond the model's last layer 4");
  CHECK(with([&](auto& b) { put_u32(b, e1, 0xFFFFFFFFu); }) ==
        "test.hfadpt: entry 1: src_layer 4294967295 predicts layer 4294967296, beyond the model's last layer 4");
  CHECK(with([&](auto& b) { put_u32(b, e1, 0); }) ==
        "test.hfadpt: entry 1: src_layer 0 predicts layer 1, which has no routed experts");
  CHECK(with([&](auto& b) { put_u32(b, e2, 1); }) == "test.hfadpt: entry 2: src_layer 1 repeats entry 0");
  // A[1][2] of entry 1 becomes +inf (0x7C00).
  CHECK(with([&](auto& b) {
          b[e1 + 4 + 2 * (1 * 6 + 2)] = 0x00;
          b[e1 + 4 + 2 * (1 * 6 + 2) + 1] = 0x7C;
        }) == "test.hfadpt: entry 1 (src_layer 2): A[1][2] is not finite");
  // B[3][0] of entry 0 becomes NaN.
  CHECK(with([&](auto& b) {
          const size_t at = kAdapterHeaderBytes + 4 + 2 * 3 * 6 + 2 * (3 * 3 + 0);
          b[at] = 0x01;
          b[at + 1] = 0x7E;
        }) == "test.hfadpt: entry 0 (src_layer 1): B[3][0] is not finite");
  CHECK(parse_error(good) == "(no error)");
}

TEST_CASE("the scorer computes B (A h) + gate bias and picks the top M") {
  const AdapterModel model = scorer_model();
  const Adapter a = scorer_adapter(1);
  AdapterScorer scorer(parse_adapter(serialize_adapter(a), model, "mem"), model.n_layers);
  CHECK(scorer.predicts_after(1));
  CHECK_FALSE(scorer.predicts_after(0));

  const std::vector<float> h = {3.f, 0.5f};  // A h = [3, 1]
  const std::vector<float> bias = {0.f, 2.5f, 0.f, 0.f};
  std::vector<float> scores(4);
  scorer.score(1, h, bias, scores);
  CHECK(scores == std::vector<float>{3.f, 3.5f, 4.f, -3.f});
  std::vector<int32_t> top(3);
  CHECK(scorer.top_m(scores, 3, top) == 3);
  CHECK(top == std::vector<int32_t>{2, 1, 0});
  scorer.score(1, h, {}, scores);  // no bias
  CHECK(scores == std::vector<float>{3.f, 1.f, 4.f, -3.f});
  // Ties go to the lower index; NaN ranks last.
  const std::vector<float> tied = {1.f, NAN, 1.f, 0.5f};
  CHECK(scorer.top_m(tied, 3, top) == 3);
  CHECK(top == std::vector<int32_t>{0, 2, 3});
  CHECK_THROWS_WITH(scorer.score(0, h, bias, scores), "adapter scorer: no entry predicts the layer after layer 0");
}

TEST_CASE("reading an adapter refuses a device, a FIFO and a file larger than any adapter of the model") {
  auto read_error = [](const std::string& path) {
    try {
      read_adapter_file(path, tiny_model());
    } catch (const PagerError& e) {
      return std::string(e.what());
    }
    FAIL("read " << path);
    return std::string();
  };
  // /dev/zero never ends: read whole, it would fill the memory.
  CHECK(read_error("/dev/zero") == "/dev/zero: not a regular file");
  const moepage::test::TempDir dir("adapter-files");
  const std::string fifo = (dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(read_error(fifo) == fifo + ": not a regular file");  // and the open did not wait for a writer
  const std::string big = (dir / "big").string();
  {
    std::FILE* f = std::fopen(big.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fseek(f, 1 << 20, SEEK_SET);
    std::fputc(0, f);
    std::fclose(f);
  }
  CHECK(read_error(big).find(big + ": file is 1048577 bytes, more than any adapter for this model") == 0);
}

TEST_CASE("HFADPT v2 carries a bias per entry: round trip, the scorer adds it, a non-finite one is refused") {
  const AdapterModel model = scorer_model();
  Adapter a = scorer_adapter(2);
  a.entries[0].bias = {0.25f, -1.f, 0.f, 10.f};
  std::vector<uint8_t> bytes = serialize_adapter(a);
  CHECK(bytes.size() == 28 + 4 + 2 * 4 + 2 * 8 + 4 * 4);
  const Adapter b = parse_adapter(bytes, model, "v2.hfadpt");
  CHECK(b.version == 2);
  REQUIRE(b.entries.size() == 1);
  CHECK(b.entries[0].bias == a.entries[0].bias);
  CHECK(serialize_adapter(b) == bytes);

  AdapterScorer scorer(b, model.n_layers);
  std::vector<float> scores(4);
  scorer.score(1, std::vector<float>{3.f, 0.5f}, {}, scores);  // B (A h) = [3, 1, 4, -3]
  CHECK(scores == std::vector<float>{3.25f, 0.f, 4.f, 7.f});

  // The bias of expert 3 (the last 4 bytes) becomes +inf.
  const uint32_t inf_bits = 0x7f800000u;
  std::memcpy(bytes.data() + bytes.size() - 4, &inf_bits, 4);
  CHECK(parse_error(bytes, model) == "test.hfadpt: entry 0 (src_layer 1): bias[3] is not finite");
  // A v1 header over v2 bytes is caught by the exact size.
  std::vector<uint8_t> as_v1 = serialize_adapter(b);
  put_u32(as_v1, 8, 1);
  CHECK(parse_error(as_v1, model).find("needs exactly 56 bytes") != std::string::npos);
  a.entries[0].bias.clear();
  CHECK_THROWS_AS(serialize_adapter(a), PagerError);  // v2 without a bias
}
