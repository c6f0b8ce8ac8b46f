// The single-token BF16 products with their loads in flight (hip/row_gemv_staged.hpp, arch
// option gemv_stages) against the register path: the ring changes when the bytes arrive, never the
// order of the sums, so the bits must be the same.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "deepseek4/hip/ops.hpp"
#include "kernel_test_support.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::gpu::test;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One token through `w` (band_rows 0: all of it; groups > 1: matmul_grouped over bands of
// rows / groups rows) with the single-token products' loads staged in a ring of `stages` steps.
std::vector<float> single_token_product(gpu::test::Device& dev, const cpu::MatRef& wd, const float* xd, int64_t groups,
                                        int stages) {
  gpu::GemmPolicy policy = kCudaCores;
  policy.gemv_stages = stages;
  const int64_t rows = wd.rows;
  float* yd = dev.zeros<float>(size_t(rows));
  if (groups > 1)
    gpu::matmul_grouped(wd, xd, groups * wd.cols, wd.cols, rows / groups, groups, yd, rows, 1, dev.stream(), policy);
  else gpu::matmul(wd, xd, wd.cols, yd, rows, 1, dev.stream(), policy);
  return dev.get(yd, size_t(rows));
}

}  // namespace

TEST_CASE("gpu single-token BF16 products give the same bits with their loads in flight (gemv_stages 2 to 4)") {
  // Shapes that take the single-token kernels: 1 to 8 slices, 1 to 4 chunks per thread, a band,
  // many blocks, grouped bands. The ring (row_gemv_staged.hpp, BF16 weights only) changes when the
  // bytes arrive, never the order of the sums, so every bit must match the register path's.
  uint64_t seed = 900;
  struct Case {
    int64_t rows, cols, band_start, band_rows, groups;
  };
  const Case cases[] = {{70, 1024, 0, 0, 1},      {70, 4096, 0, 0, 1},    {37, 8192, 0, 0, 1},
                        {300, 1024, 100, 150, 1}, {20000, 1024, 0, 0, 1}, {300, 1024, 0, 0, 3}};
  for (const Case& k : cases) {
    Rng rng(seed++);
    gpu::test::Device dev;
    const HostMat hm = random_mat(rng, Dtype::BF16, k.rows, k.cols);
    cpu::MatRef wd = hm.on(dev, 0);
    if (k.band_rows) wd = wd.row_band(k.band_start, k.band_rows);
    const float* xd = dev.put(rng.floats(size_t(k.groups * k.cols)));
    const std::vector<float> plain = single_token_product(dev, wd, xd, k.groups, 0);
    for (int stages : {2, 3, 4}) {
      INFO("BF16 W", shape_str({k.rows, k.cols}), " band ", k.band_start, "+", k.band_rows, " groups ", k.groups,
           " stages ", stages);
      CHECK(same_bits(single_token_product(dev, wd, xd, k.groups, stages), plain));
    }
  }
  // The fused SwiGLU of two matrices (the shared expert's up half); at 8192 columns four steps of
  // a block's rows would not fit in shared memory, and the launcher builds it with two.
  for (int64_t cols : {4096, 8192}) {
    Rng rng(seed++);
    gpu::test::Device dev;
    const HostMat w1 = random_mat(rng, Dtype::BF16, 200, cols), w3 = random_mat(rng, Dtype::BF16, 200, cols);
    const float* xd = dev.put(rng.floats(size_t(cols)));
    std::vector<float> plain;
    for (int stages : {0, 2, 3, 4}) {
      gpu::GemmPolicy policy = kCudaCores;
      policy.gemv_stages = stages;
      float* h1 = dev.zeros<float>(200);
      float* h3 = dev.zeros<float>(200);
      gpu::matmul_swiglu(w1.on(dev, 0), w3.on(dev, 0), xd, cols, 1, 3.0f, h1, h3, dev.stream(), policy);
      const std::vector<float> got = dev.get(h1, 200);
      INFO("BF16 swiglu W[200, ", cols, "] stages ", stages);
      if (stages == 0) plain = got;
      else CHECK(same_bits(got, plain));
    }
  }
}
