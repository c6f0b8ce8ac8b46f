// The dense products on the vendor's BLAS (GemmPolicy::library_min_tokens, library_gemm.hpp)
// against the CPU twins: FP8, FP4 and BF16 weights dequantized to bf16, x in two bf16 parts (held
// to 5e-5 of the largest output, as the matrix-core tiles) or one (1e-2). Outputs start as NaN, so
// an element never written fails. Where the build has the library, the result must also differ
// from the matrix-core tiles' bit for bit (proof that the library ran: its sums are in another
// order); where it has none (AMD), the same calls must give the other paths' results.
#include <doctest/doctest.h>

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

const Dtype kLibraryDtypes[] = {Dtype::BF16, Dtype::F8_E4M3, Dtype::I8};

gpu::GemmPolicy library_policy(bool split) {
  gpu::GemmPolicy p{16, split};
  p.library_min_tokens = 16;
  return p;
}
const gpu::GemmPolicy kTiles{16, true};  // the matrix-core tiles alone

double threshold(bool split) { return split ? 5e-5 : 1e-2; }

std::vector<float> poison(size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

void check_took_library(const std::string& what, const std::vector<float>& library, const std::vector<float>& tiles) {
  if (!gpu::library_gemm_available()) return;
  INFO(what);
  CHECK(std::memcmp(library.data(), tiles.data(), library.size() * sizeof(float)) != 0);
}

void check_library_matmul(Dtype dtype, int64_t rows, int64_t cols, int64_t n_tokens, int64_t band_start,
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
  const std::string what = "library matmul " + std::string(dtype_name(dtype)) + " W" + shape_str({rows, cols}) +
                           " band " + shape_str({band_start, band_rows}) + " tokens " + std::to_string(n_tokens) +
                           " ld_x " + std::to_string(ld_x);
  float* y_tiles = dev.put(poison(want.size()));
  gpu::matmul(wd, xd, ld_x, y_tiles, ld_y, n_tokens, dev.stream(), kTiles);
  const std::vector<float> tiles = dev.get(y_tiles, want.size());
  for (bool split : {true, false}) {
    float* yd = dev.put(poison(want.size()));
    gpu::matmul(wd, xd, ld_x, yd, ld_y, n_tokens, dev.stream(), library_policy(split));
    const std::vector<float> got = dev.get(yd, want.size());
    check_close(what + (split ? " split" : " bf16"), got, want, threshold(split));
    if (split && x_pad % 4 == 0 && cols >= 512) check_took_library(what, got, tiles);
  }
}

}  // namespace

TEST_CASE("gpu matmul on the vendor BLAS matches cpu::matmul to bf16 rounding, bands and long prompts included") {
  uint64_t seed = 1300;
  for (Dtype dtype : kLibraryDtypes) {
    check_library_matmul(dtype, 128, 64, 16, 0, 0, 0, seed++);
    check_library_matmul(dtype, 300, 1024, 200, 0, 0, 4, seed++);
    // An FP8 band crossing a 128-row scale block, and an odd band start.
    check_library_matmul(dtype, 300, 512, 130, 100, 150, 0, seed++);
    check_library_matmul(dtype, 1030, 4096, 130, 0, 0, 0, seed++);
    // Past kLibraryTokenChunk (1,024): x's parts are made and multiplied in two turns.
    check_library_matmul(dtype, 96, 512, 1100, 0, 0, 0, seed++);
    // x rows that cannot be read as float4: the library declines, the CUDA cores take it.
    check_library_matmul(dtype, 200, 256, 40, 0, 0, 1, seed++);
  }
}

TEST_CASE("gpu matmul_grouped on the vendor BLAS matches cpu::matmul band by band") {
  uint64_t seed = 1350;
  for (Dtype dtype : kLibraryDtypes)
    for (int64_t n_tokens : {40, 1030}) {
      const int64_t groups = 3, rpg = 256, cols = 512;
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
      float* y_tiles = dev.put(poison(want.size()));
      gpu::matmul_grouped(hm.on(dev, 0), xd, ld_x, x_stride, rpg, groups, y_tiles, ld_y, n_tokens, dev.stream(),
                          kTiles);
      const std::vector<float> tiles = dev.get(y_tiles, want.size());
      for (bool split : {true, false}) {
        float* yd = dev.put(poison(want.size()));
        gpu::matmul_grouped(hm.on(dev, 0), xd, ld_x, x_stride, rpg, groups, yd, ld_y, n_tokens, dev.stream(),
                            library_policy(split));
        const std::string what = "library matmul_grouped " + std::string(dtype_name(dtype)) + " tokens " +
                                 std::to_string(n_tokens) + (split ? " split" : " bf16");
        const std::vector<float> got = dev.get(yd, want.size());
        check_close(what, got, want, threshold(split));
        if (split) check_took_library(what, got, tiles);
      }
    }
}

TEST_CASE("gpu matmul_swiglu on the vendor BLAS matches cpu::matmul twice then cpu::swiglu_clamped") {
  uint64_t seed = 1380;
  for (Dtype dtype : kLibraryDtypes) {
    Rng rng(seed++);
    gpu::test::Device dev;
    const int64_t rows = 200, cols = 1024, n_tokens = 130;
    const HostMat w1 = random_mat(rng, dtype, rows, cols), w3 = random_mat(rng, dtype, rows, cols);
    const std::vector<float> x = rng.floats(size_t(n_tokens * cols));
    const std::vector<float> want = cpu_swiglu_product(w1.ref(), w3.ref(), x, n_tokens, 3.0f);
    const float* xd = dev.put(x);
    for (bool split : {true, false}) {
      float* h1 = dev.put(poison(want.size()));
      float* h3 = dev.zeros<float>(want.size());
      gpu::matmul_swiglu(w1.on(dev, 0), w3.on(dev, 0), xd, cols, n_tokens, 3.0f, h1, h3, dev.stream(),
                         library_policy(split));
      check_close("library matmul_swiglu " + std::string(dtype_name(dtype)) + (split ? " split" : " bf16"),
                  dev.get(h1, want.size()), want, threshold(split));
    }
  }
}
