// Every weight encoding through matmul against a naive double-precision reference that decodes
// each element with the scalar decoders of plugins/support/dtype.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "deepseek4/cpu/gemm.hpp"

using namespace moepage;
using namespace moepage::ds4::cpu;

namespace {

struct Encoded {
  std::vector<std::byte> data, scale;
  MatRef ref;
};

// Random codes straight in the stored form, so the test covers every code, not only those a
// quantizer would produce.
Encoded random_matrix(Dtype dtype, int64_t rows, int64_t cols, std::mt19937& rng) {
  Encoded e;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255), exp_byte(120, 130);
  auto put_bytes = [&](size_t n, bool avoid_nan_e4m3) {
    e.data.resize(n);
    for (auto& b : e.data) {
      int v = byte(rng);
      if (avoid_nan_e4m3 && (v & 0x7F) == 0x7F) v &= 0xFE;  // 0x7F/0xFF are NaN in e4m3
      b = std::byte(v);
    }
  };
  switch (dtype) {
    case Dtype::F32:
      e.data.resize(size_t(rows * cols) * 4);
      for (int64_t i = 0; i < rows * cols; ++i) {
        const float f = u(rng);
        std::memcpy(e.data.data() + 4 * i, &f, 4);
      }
      break;
    case Dtype::BF16:
    case Dtype::F16:
      e.data.resize(size_t(rows * cols) * 2);
      for (int64_t i = 0; i < rows * cols; ++i) {
        const uint16_t b = dtype == Dtype::BF16 ? float_to_bf16(u(rng)) : float_to_f16(u(rng));
        std::memcpy(e.data.data() + 2 * i, &b, 2);
      }
      break;
    case Dtype::F8_E4M3:
      put_bytes(size_t(rows * cols), true);
      e.scale.resize(size_t(((rows + 127) / 128) * ((cols + 127) / 128)));
      for (auto& s : e.scale) s = std::byte(exp_byte(rng));
      break;
    case Dtype::I8:
      put_bytes(size_t(rows * cols / 2), false);
      e.scale.resize(size_t(rows * cols / 32));
      for (auto& s : e.scale) s = std::byte(exp_byte(rng));
      break;
    default: FAIL("unexpected dtype");
  }
  e.ref = MatRef{dtype, rows, cols, e.data.data(), e.scale.empty() ? nullptr : e.scale.data()};
  return e;
}

// The element (r, c) of the stored tensor, decoded one at a time.
double element(const Encoded& e, int64_t r, int64_t c) {
  const auto* b = reinterpret_cast<const uint8_t*>(e.data.data());
  const auto* s = reinterpret_cast<const uint8_t*>(e.scale.data());
  const int64_t cols = e.ref.cols;
  switch (e.ref.dtype) {
    case Dtype::F32: {
      float f;
      std::memcpy(&f, b + 4 * (r * cols + c), 4);
      return f;
    }
    case Dtype::BF16: {
      uint16_t v;
      std::memcpy(&v, b + 2 * (r * cols + c), 2);
      return bf16_to_float(v);
    }
    case Dtype::F16: {
      uint16_t v;
      std::memcpy(&v, b + 2 * (r * cols + c), 2);
      return f16_to_float(v);
    }
    case Dtype::F8_E4M3:
      return double(e4m3_to_float(b[r * cols + c])) * e8m0_to_float(s[(r / 128) * ((cols + 127) / 128) + c / 128]);
    case Dtype::I8: {
      const uint8_t byte = b[r * (cols / 2) + c / 2];
      const uint8_t code = c % 2 ? byte >> 4 : byte & 0xF;
      return double(e2m1_to_float(code)) * e8m0_to_float(s[r * (cols / 32) + c / 32]);
    }
    default: return 0;
  }
}

void check_matmul(Dtype dtype, int64_t rows, int64_t cols, int64_t tokens, ThreadPool& pool) {
  std::mt19937 rng(unsigned(rows * 31 + cols * 7 + tokens + int(dtype)));
  const Encoded w = random_matrix(dtype, rows, cols, rng);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t ld_x = cols + 3, ld_y = rows + 5;  // strides wider than the rows
  std::vector<float> x(size_t(tokens * ld_x)), y(size_t(tokens * ld_y), 0.0f);
  for (auto& v : x) v = u(rng);
  matmul(pool, w.ref, x.data(), ld_x, y.data(), ld_y, tokens);
  double worst = 0;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0, mag = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double p = element(w, r, c) * double(x[size_t(t * ld_x + c)]);
        ref += p;
        mag += std::fabs(p);
      }
      worst = std::max(worst, std::fabs(double(y[size_t(t * ld_y + r)]) - ref) / (mag + 1e-30));
    }
  INFO("dtype ", dtype_name(dtype), " rows ", rows, " cols ", cols, " tokens ", tokens);
  CHECK(worst < 1e-5);
}

}  // namespace

TEST_CASE("matmul matches a double-precision reference for every weight encoding") {
  ThreadPool pool(2);
  for (Dtype d : {Dtype::F32, Dtype::BF16, Dtype::F16, Dtype::F8_E4M3, Dtype::I8})
    for (int64_t tokens : {1, 3, 70}) {
      check_matmul(d, 131, 320, tokens, pool);  // several FP8 blocks, partial last block
      check_matmul(d, 7, 64, tokens, pool);     // fewer rows than worth a thread
    }
  check_matmul(Dtype::F8_E4M3, 260, 1100, 2, pool);  // more columns than one decode chunk
}

TEST_CASE("a band of rows reads the right rows and the right FP8 block scales") {
  ThreadPool pool(1);
  std::mt19937 rng(5);
  const Encoded w = random_matrix(Dtype::F8_E4M3, 300, 256, rng);
  std::vector<float> x(256, 0.0f);
  x[200] = 1.0f;  // picks column 200 of every row
  std::vector<float> band(150), full(300);
  matmul(pool, w.ref.row_band(100, 150), x.data(), 256, band.data(), 150, 1);
  matmul(pool, w.ref, x.data(), 256, full.data(), 300, 1);
  for (int i = 0; i < 150; ++i) CHECK(band[size_t(i)] == full[size_t(100 + i)]);
}

TEST_CASE("decode_row of FP4 handles odd column starts and lengths") {
  std::mt19937 rng(9);
  const Encoded w = random_matrix(Dtype::I8, 3, 96, rng);
  std::vector<float> out(96);
  for (int64_t c0 : {0, 1, 31, 33}) {
    const int64_t n = 96 - c0 - (c0 % 2);
    decode_row(w.ref, 2, c0, n, out.data());
    for (int64_t i = 0; i < n; ++i) CHECK(double(out[size_t(i)]) == element(w, 2, c0 + i));
  }
}

TEST_CASE("an FP8 weight without its scale is refused") {
  std::vector<std::byte> data(16);
  CHECK(check_matref(MatRef{Dtype::F8_E4M3, 4, 4, data.data(), nullptr}).find("e8m0") != std::string::npos);
  CHECK(check_matref(MatRef{Dtype::I8, 4, 8, data.data(), data.data()}).find("multiple of 32") != std::string::npos);
  CHECK(check_matref(MatRef{Dtype::I64, 4, 4, data.data(), nullptr}).find("unsupported") != std::string::npos);
  CHECK(check_matref(MatRef{Dtype::BF16, 4, 4, data.data(), nullptr}).empty());
}

TEST_CASE("weights at unaligned addresses (safetensors does not align) are read correctly") {
  ThreadPool pool(1);
  for (Dtype d : {Dtype::F32, Dtype::BF16, Dtype::F16}) {
    std::mt19937 rng(17);
    const Encoded w = random_matrix(d, 5, 40, rng);
    std::vector<std::byte> shifted(w.data.size() + 1);
    std::memcpy(shifted.data() + 1, w.data.data(), w.data.size());
    MatRef odd = w.ref;
    odd.data = shifted.data() + 1;
    std::vector<float> x(40, 0.5f), a(5), b(5);
    matmul(pool, w.ref, x.data(), 40, a.data(), 5, 1);
    matmul(pool, odd, x.data(), 40, b.data(), 5, 1);
    for (int i = 0; i < 5; ++i) CHECK(a[size_t(i)] == b[size_t(i)]);
  }
}
