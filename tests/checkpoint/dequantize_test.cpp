// FP8 block and FP4 group dequantization through a real checkpoint, against values computed here.
#include <doctest/doctest.h>

#include <cmath>

#include "checkpoint/dequantize.hpp"
#include "checkpoint/quantize.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "support/temp_dir.hpp"

using namespace moepage;
using namespace moepage::ckpt;
using moepage::test::TempDir;

TEST_CASE("FP4 bytes hold the even logical column in the low nibble and scale per 32 inputs") {
  // Row 0: byte 0x21 -> [code 1, code 2] = [0.5, 1.0]; groups 0 and 1 scaled by 2^1 and 2^-1.
  std::vector<uint8_t> packed(2 * 32, 0);
  packed[0] = 0x21;
  packed[16] = 0xF7;  // row 0, logical columns 32, 33: code 7 (6.0), code 15 (-6.0)
  packed[32] = 0x9C;  // row 1, columns 0, 1: code 12 (-2.0), code 9 (-0.5)
  const std::vector<uint8_t> scale = {128, 126, 127, 127};
  std::vector<float> out(2 * 64);
  dequantize_fp4(packed.data(), 2, 64, scale.data(), out.data(), "t");
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == 2.0f);
  CHECK(out[32] == 3.0f);
  CHECK(out[33] == -3.0f);
  CHECK(out[64] == -2.0f);
  CHECK(out[65] == -0.5f);
}

TEST_CASE("an FP8 weight scales each 128x128 block by its own power of two") {
  const uint64_t rows = 130, cols = 129;                    // ragged edge blocks
  std::vector<uint8_t> q(rows * cols, 0x38);                // e4m3 1.0
  const std::vector<uint8_t> scale = {127, 128, 126, 130};  // [2, 2] blocks
  std::vector<float> out(rows * cols);
  dequantize_fp8_blocks(q.data(), rows, cols, scale.data(), Dtype::F8_E8M0, out.data(), "t");
  CHECK(out[0] == 1.0f);
  CHECK(out[128] == 2.0f);         // row 0, column block 1
  CHECK(out[128 * cols] == 0.5f);  // row 128, column block 0
  CHECK(out[129 * cols + 128] == 8.0f);
}

TEST_CASE("a 0xFF scale is an error naming the tensor") {
  std::vector<uint8_t> q(4, 0x38), scale = {0xFF};
  std::vector<float> out(4);
  CHECK_THROWS_WITH_AS(
      dequantize_fp8_blocks(q.data(), 2, 2, scale.data(), Dtype::F8_E8M0, out.data(), "layers.0.attn.wq_a.weight"),
      "tensor 'layers.0.attn.wq_a.weight': scale element 0 is 0xFF, the E8M0 NaN", CheckpointError);
  std::vector<uint8_t> packed(16, 0x11), s4 = {0xFF};
  std::vector<float> o4(32);
  CHECK_THROWS_WITH_AS(dequantize_fp4(packed.data(), 1, 32, s4.data(), o4.data(), "experts.3.w2.weight"),
                       doctest::Contains("tensor 'experts.3.w2.weight': scale element 0 is 0xFF"), CheckpointError);
}

TEST_CASE("quantized weights written to a checkpoint dequantize to the values their codes encode") {
  TempDir dir("dequant-roundtrip");
  const uint64_t rows = 256, cols = 192;
  std::vector<float> w(rows * cols);
  for (uint64_t i = 0; i < w.size(); ++i) w[i] = std::sin(float(i) * 0.37f) * (1.0f + float(i % 97) / 10.0f);
  std::vector<uint8_t> q8(rows * cols), s8(2 * 2), q4(rows * cols / 2), s4(rows * cols / 32);
  quantize_fp8_blocks(w.data(), rows, cols, q8.data(), s8.data());
  quantize_fp4(w.data(), rows, cols, q4.data(), s4.data());
  {
    SafetensorsWriter out(dir / "model.safetensors");
    out.declare("fp8.weight", Dtype::F8_E4M3, {rows, cols});
    out.declare("fp8.scale", Dtype::F8_E8M0, {2, 2});
    out.declare("fp4.weight", Dtype::I8, {rows, cols / 2});
    out.declare("fp4.scale", Dtype::F8_E8M0, {rows, cols / 32});
    out.declare("bf16.weight", Dtype::BF16, {rows, cols});
    out.begin();
    out.write("fp8.weight", q8);
    out.write("fp8.scale", s8);
    out.write("fp4.weight", q4);
    out.write("fp4.scale", s4);
    std::vector<uint8_t> bf(rows * cols * 2);
    for (uint64_t i = 0; i < w.size(); ++i) {
      const uint16_t h = float_to_bf16(w[i]);
      bf[2 * i] = uint8_t(h);
      bf[2 * i + 1] = uint8_t(h >> 8);
    }
    out.write("bf16.weight", bf);
    out.finish();
  }
  const Checkpoint ck = Checkpoint::open(dir.path());
  const FloatTensor f8 = dequantize_tensor(ck, "fp8.weight");
  const FloatTensor f4 = dequantize_tensor(ck, "fp4.weight");
  const FloatTensor b16 = dequantize_tensor(ck, "bf16.weight");
  CHECK(f4.shape == std::vector<uint64_t>{rows, cols});  // logical columns
  int bad8 = 0, bad4 = 0, bad16 = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const uint64_t i = r * cols + c;
      const float e8 = e4m3_to_float(q8[i]) * e8m0_to_float(s8[(r / 128) * 2 + c / 128]);
      const uint8_t nib = (c % 2) ? (q4[i / 2] >> 4) : (q4[i / 2] & 0xF);
      const float e4 = e2m1_to_float(nib) * e8m0_to_float(s4[r * (cols / 32) + c / 32]);
      bad8 += f8.values[i] != e8;
      bad4 += f4.values[i] != e4;
      bad16 += b16.values[i] != bf16_to_float(float_to_bf16(w[i]));
      // And the codes are close to the original: FP8 within 1/16 relative of the block max.
    }
  }
  CHECK(bad8 == 0);
  CHECK(bad4 == 0);
  CHECK(bad16 == 0);
  double err8 = 0, norm = 0;
  for (uint64_t i = 0; i < w.size(); ++i) {
    err8 += (f8.values[i] - w[i]) * (f8.values[i] - w[i]);
    norm += w[i] * w[i];
  }
  CHECK(std::sqrt(err8 / norm) < 0.05);
}

TEST_CASE("an FP8 weight without its scale sidecar is an error naming the file and the tensor") {
  TempDir dir("dequant-no-scale");
  {
    SafetensorsWriter out(dir / "model.safetensors");
    out.declare("w.weight", Dtype::F8_E4M3, {2, 2});
    out.begin();
    out.write("w.weight", std::vector<uint8_t>(4, 0x38));
    out.finish();
  }
  const Checkpoint ck = Checkpoint::open(dir.path());
  CHECK_THROWS_WITH_AS(
      dequantize_tensor(ck, "w.weight"),
      ((dir / "model.safetensors").string() + ": tensor 'w.weight': F8_E4M3 weight has no scale tensor 'w.scale'")
          .c_str(),
      CheckpointError);
}
