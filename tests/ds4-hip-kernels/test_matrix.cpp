// The weight products on the matrix cores (prefill: many tokens per product) against the CPU
// twins, in both precisions: x as two bf16 parts (split, the default: held to 5e-5 of the largest
// output) and as one (held to 1e-2; the weights are exact in bf16 either way); both through the
// hand-written tiles and through the vendor's BLAS (GemmPolicy::library_min_tokens,
// library_gemm.hpp), where x's parts are made and multiplied in turns past 1,024 tokens. Outputs
// start as NaN, so an element never written fails. Where the build and device have matrix cores,
// the result must also differ from the CUDA-core product of the same inputs, and where the build
// has the library, its split result from the tiles' (its sums run in another order): proof that
// each path ran. Products the library declines (x rows not float4-aligned) take the other paths.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "deepseek4/cpu/gemm.hpp"
#include "deepseek4/cpu/ops.hpp"
#include "deepseek4/hip/ops.hpp"
#include "kernel_test_support.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::gpu::test;

namespace {

constexpr double kSplitThreshold = 5e-5;  // x in two bf16 parts, float sums
constexpr double kBf16Threshold = 1e-2;   // x in one bf16 part
const Dtype kMatrixDtypes[] = {Dtype::BF16, Dtype::F8_E4M3, Dtype::I8};
const gpu::GemmPolicy kSplit{16, true}, kBf16{16, false};
gpu::GemmPolicy on_library(gpu::GemmPolicy p) {
  p.library_min_tokens = 16;
  return p;
}
const gpu::GemmPolicy kLibrarySplit = on_library(kSplit), kLibraryBf16 = on_library(kBf16);
const gpu::GemmPolicy kPolicies[] = {kSplit, kBf16, kLibrarySplit, kLibraryBf16};

double threshold(const gpu::GemmPolicy& p) { return p.split ? kSplitThreshold : kBf16Threshold; }
std::string mode(const gpu::GemmPolicy& p) {
  return std::string(p.split ? " split" : " bf16") + (p.library_min_tokens ? " library" : "");
}

std::vector<float> poison(size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

// The matrix-core result must not be the CUDA-core one bit for bit (where matrix cores exist).
void check_took_matrix_path(const std::string& what, const std::vector<float>& matrix, const std::vector<float>& cuda) {
  if (!gpu::matrix_cores_available()) return;
  INFO(what);
  CHECK(std::memcmp(matrix.data(), cuda.data(), matrix.size() * sizeof(float)) != 0);
}

// Results by policy of one product, and the proofs above: each path differs from the CUDA cores,
// and the library's split result from the tiles' (where it has at least 512 columns to sum).
struct PathResults {
  std::vector<float> cuda, tiles_split;
  void check(const std::string& what, const gpu::GemmPolicy& policy, const std::vector<float>& got, int64_t cols) {
    check_took_matrix_path(what, got, cuda);
    if (policy.split && !policy.library_min_tokens) tiles_split = got;
    if (policy.split && policy.library_min_tokens && cols >= 512 && gpu::library_gemm_available()) {
      INFO(what << " against the tiles");
      CHECK(std::memcmp(got.data(), tiles_split.data(), got.size() * sizeof(float)) != 0);
    }
  }
};

void check_matrix_matmul(Dtype dtype, int64_t rows, int64_t cols, int64_t n_tokens, int64_t band_start,
                         int64_t band_rows, int64_t x_pad, uint64_t seed) {
  Rng rng(seed);
  gpu::test::Device dev;
  cpu::ThreadPool pool(1);
  const HostMat hm = random_mat(rng, dtype, rows, cols);
  cpu::MatRef w = hm.ref(), wd = hm.on(dev, 0);
  if (band_rows) {
    w = w.row_band(band_start, band_rows);
    wd = wd.row_band(band_start, band_rows);
  }
  const int64_t ld_x = cols + x_pad, ld_y = w.rows;
  const std::vector<float> x = rng.floats(size_t(n_tokens * ld_x));
  std::vector<float> want(size_t(n_tokens * ld_y));
  cpu::matmul(pool, w, x.data(), ld_x, want.data(), ld_y, n_tokens);
  const float* xd = dev.put(x);
  float* y_cuda = dev.put(poison(want.size()));
  gpu::matmul(wd, xd, ld_x, y_cuda, ld_y, n_tokens, dev.stream(), kCudaCores);
  const std::string what = "matrix matmul " + std::string(dtype_name(dtype)) + " W" + shape_str({rows, cols}) +
                           " band " + shape_str({band_start, band_rows}) + " tokens " + std::to_string(n_tokens) +
                           " ld_x " + std::to_string(ld_x);
  PathResults paths{dev.get(y_cuda, want.size()), {}};
  check_close(what + " (CUDA cores)", paths.cuda, want, matmul_threshold(dtype));
  for (const gpu::GemmPolicy& policy : kPolicies) {
    float* yd = dev.put(poison(want.size()));
    gpu::matmul(wd, xd, ld_x, yd, ld_y, n_tokens, dev.stream(), policy);
    const std::vector<float> got = dev.get(yd, want.size());
    check_close(what + mode(policy), got, want, threshold(policy));
    if (x_pad % 4 == 0) paths.check(what + mode(policy), policy, got, cols);
  }
}

}  // namespace

TEST_CASE("gpu matmul on the matrix cores matches cpu::matmul to bf16 rounding, tails and bands included") {
  uint64_t seed = 900;
  for (Dtype dtype : kMatrixDtypes) {
    // One tile; rows and tokens that leave partial tiles; several column steps; an FP8 band
    // crossing a 128-row scale block; x rows that cannot be read as float4 (CUDA cores then).
    for (int64_t n_tokens : {16, 64, 65, 200}) {
      check_matrix_matmul(dtype, 128, 64, n_tokens, 0, 0, 0, seed++);
      check_matrix_matmul(dtype, 300, 1024, n_tokens, 0, 0, 4, seed++);
      check_matrix_matmul(dtype, 300, 512, n_tokens, 100, 150, 0, seed++);
    }
    check_matrix_matmul(dtype, 1030, 4096, 130, 0, 0, 0, seed++);
    check_matrix_matmul(dtype, 200, 256, 40, 0, 0, 1, seed++);
    // On the H200 the grids above take 32-token tiles (their 64-token grids fill at most half
    // its multiprocessors); this one (125 row tiles by 5 token tiles of 64, the last of 44 tokens:
    // 625 blocks) takes 64-token tiles on any GPU of fewer than 1,250 multiprocessors.
    check_matrix_matmul(dtype, 16000, 128, 300, 0, 0, 0, seed++);
    // Past the library's 1,024-token turns (kLibraryTokenChunk): two turns of x's parts.
    check_matrix_matmul(dtype, 96, 512, 1100, 0, 0, 0, seed++);
  }
}

TEST_CASE("gpu matmul_grouped on the matrix cores matches cpu::matmul band by band") {
  uint64_t seed = 950;
  for (Dtype dtype : kMatrixDtypes)
    for (int64_t n_tokens : {16, 100, 700}) {  // 700: 64-token tiles (48 row tiles by 11 token tiles)
      const int64_t groups = 3, rpg = n_tokens > 256 ? 2048 : 256, cols = n_tokens > 256 ? 128 : 512;
      Rng rng(seed++);
      gpu::test::Device dev;
      cpu::ThreadPool pool(1);
      const HostMat hm = random_mat(rng, dtype, groups * rpg, cols);
      const int64_t x_stride = cols + 4, ld_x = groups * x_stride, ld_y = groups * rpg;
      const std::vector<float> x = rng.floats(size_t(n_tokens * ld_x));
      std::vector<float> want(size_t(n_tokens * ld_y));
      for (int64_t g = 0; g < groups; ++g)
        cpu::matmul(pool, hm.ref().row_band(g * rpg, rpg), x.data() + g * x_stride, ld_x, want.data() + g * rpg, ld_y,
                    n_tokens);
      const float* xd = dev.put(x);
      float* y_cuda = dev.put(poison(want.size()));
      gpu::matmul_grouped(hm.on(dev, 0), xd, ld_x, x_stride, rpg, groups, y_cuda, ld_y, n_tokens, dev.stream(),
                          kCudaCores);
      PathResults paths{dev.get(y_cuda, want.size()), {}};
      for (const gpu::GemmPolicy& policy : kPolicies) {
        float* yd = dev.put(poison(want.size()));
        gpu::matmul_grouped(hm.on(dev, 0), xd, ld_x, x_stride, rpg, groups, yd, ld_y, n_tokens, dev.stream(), policy);
        const std::string what = "matrix matmul_grouped " + std::string(dtype_name(dtype)) + " tokens " +
                                 std::to_string(n_tokens) + mode(policy);
        const std::vector<float> got = dev.get(yd, want.size());
        check_close(what, got, want, threshold(policy));
        paths.check(what, policy, got, cols);
      }
    }
}

TEST_CASE("gpu matmul_swiglu on the matrix cores matches cpu::matmul twice then cpu::swiglu_clamped") {
  uint64_t seed = 980;
  for (Dtype dtype : kMatrixDtypes)
    for (int64_t n_tokens : {16, 70}) {
      Rng rng(seed++);
      gpu::test::Device dev;
      const int64_t rows = 200, cols = 1024;  // rows: a partial 64-row tile at the end
      const HostMat w1 = random_mat(rng, dtype, rows, cols), w3 = random_mat(rng, dtype, rows, cols);
      const std::vector<float> x = rng.floats(size_t(n_tokens * cols));
      const std::vector<float> want = cpu_swiglu_product(w1.ref(), w3.ref(), x, n_tokens, 3.0f);
      const float* xd = dev.put(x);
      for (const gpu::GemmPolicy& policy : kPolicies) {
        float* h1 = dev.put(poison(want.size()));
        float* h3 = dev.zeros<float>(want.size());
        gpu::matmul_swiglu(w1.on(dev, 0), w3.on(dev, 0), xd, cols, n_tokens, 3.0f, h1, h3, dev.stream(), policy);
        check_close("matrix matmul_swiglu " + std::string(dtype_name(dtype)) + " tokens " + std::to_string(n_tokens) +
                        mode(policy),
                    dev.get(h1, want.size()), want, threshold(policy));
      }
    }
}

// Every FP4 code under every e8m0 scale through the matrix-core decode (and the library path's
// dequantization, library_gemm.hpp, where the build has it), exactly: token t is the
// unit vector e_t, so output (t, r) is weight (r, t) alone (x = 1 needs no second bf16 part).
// Row r's two 32-column groups carry scales 2r and 2r + 1 (all 256, NaN and the scales past 2^1
// that take the two-multiply path included) and its codes run through all sixteen in each group.
// A result below float's normal range may come back as a zero of its sign (the matrix cores'
// float sums need not keep subnormals); everything else must match the CPU's decode bit for bit.
// Under the two largest scales (2^126, 2^127) the codes of 2 and more (4 and more under 2^126)
// would decode past float's range: the CPU scales a group's sum, the matrix cores each weight, so
// an infinite weight times a zero of x is NaN on one side and 0 on the other. Those codes become
// 1.5 of their sign; every code is still met under the 252 other scales.
TEST_CASE("gpu matrix-core products decode every FP4 code under every scale exactly") {
  const int64_t rows = 128, cols = 64, n_tokens = cols;
  HostMat hm;
  hm.dtype = Dtype::I8;
  hm.rows = rows;
  hm.cols = cols;
  hm.data.resize(ExpertLayout::weight_bytes(hm.dtype, uint64_t(rows), uint64_t(cols)));
  hm.scale.resize(ExpertLayout::scale_bytes(hm.dtype, uint64_t(rows), uint64_t(cols)));
  REQUIRE(hm.scale.size() == 256);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += 2) {
      const auto code = [&](int64_t k) {
        const uint8_t v = uint8_t((r + k) % 16), e = uint8_t(2 * r + k / 32), magnitude = v & 7u;
        const bool overflows = (e == 253 && magnitude >= 6) || (e == 254 && magnitude >= 4);
        return overflows ? uint8_t((v & 8u) | 3u) : v;
      };
      hm.data[size_t((r * cols + c) / 2)] = std::byte(uint8_t(code(c) | (code(c + 1) << 4)));
    }
  for (size_t i = 0; i < hm.scale.size(); ++i) hm.scale[i] = std::byte(uint8_t(i));
  std::vector<float> x(size_t(n_tokens * cols), 0.0f);
  for (int64_t t = 0; t < n_tokens; ++t) x[size_t(t * cols + t)] = 1.0f;
  std::vector<float> want(size_t(n_tokens * rows));
  cpu::ThreadPool pool(1);
  cpu::matmul(pool, hm.ref(), x.data(), cols, want.data(), rows, n_tokens);

  gpu::test::Device dev;
  const float* xd = dev.put(x);
  for (const gpu::GemmPolicy& policy : {kSplit, kBf16, kLibrarySplit}) {
    float* yd = dev.put(poison(want.size()));
    gpu::matmul(hm.on(dev, 0), xd, cols, yd, rows, n_tokens, dev.stream(), policy);
    const std::vector<float> got = dev.get(yd, want.size());
    size_t mismatches = 0, flushed = 0, first = want.size();
    for (size_t i = 0; i < want.size(); ++i) {
      uint32_t gb, wb;
      std::memcpy(&gb, &got[i], 4);
      std::memcpy(&wb, &want[i], 4);
      const bool same = gb == wb || (std::isnan(got[i]) && std::isnan(want[i]));
      const bool flush =
          std::fpclassify(want[i]) == FP_SUBNORMAL && got[i] == 0.0f && std::signbit(got[i]) == std::signbit(want[i]);
      if (flush) ++flushed;
      if (!same && !flush && mismatches++ == 0) first = i;
    }
    std::string detail = "FP4 exact decode" + mode(policy) + ": " + std::to_string(mismatches) + " mismatches";
    if (first < want.size())
      detail += ", the first at token " + std::to_string(first / rows) + ", row " + std::to_string(first % rows) +
                ": got " + std::to_string(got[first]) + ", want " + std::to_string(want[first]);
    INFO(detail);
    CHECK(mismatches == 0);
    MESSAGE("FP4 exact decode" << mode(policy) << ": " << flushed << " subnormal results flushed to zero");
  }
}
