// matmul_many (hip/gemv_many.hpp), a decode step's products of one input in one launch, against
// cpu::matmul and against matmul() of each product alone.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "deepseek4/cpu/gemm.hpp"
#include "deepseek4/cpu/ops.hpp"
#include "deepseek4/hip/gemv_many.hpp"
#include "deepseek4/hip/ops.hpp"
#include "kernel_test_support.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::gpu::test;

TEST_CASE("gpu matmul_many gives each product matmul's bits, and the CPU's values, in one launch") {
  // Row counts that leave partial blocks and differ between the products (the attention's query
  // latent and KV head, a compressor's two and the indexer compressor's two), in every encoding the
  // single-token kernels take, on the register path and (BF16, NVIDIA) the ring.
  uint64_t seed = 2100;
  const std::pair<Dtype, int64_t> encodings[] = {
      {Dtype::F32, 256}, {Dtype::BF16, 512}, {Dtype::F8_E4M3, 1024}, {Dtype::I8, 2048}};
  const int64_t row_counts[] = {300, 37, 128, 5};
  for (const auto& [dtype, cols] : encodings)
    for (int stages : {0, 3})
      for (size_t n = 1; n <= gpu::kMaxManyProducts; ++n) {
        Rng rng(seed++);
        gpu::test::Device dev;
        cpu::ThreadPool pool(1);
        gpu::GemmPolicy policy = kCudaCores;
        policy.gemv_stages = stages;
        const std::vector<float> x = rng.floats(size_t(cols));
        const float* xd = dev.put(x);
        std::vector<HostMat> mats;
        std::vector<gpu::MatProduct> products;
        for (size_t i = 0; i < n; ++i) {
          mats.push_back(random_mat(rng, dtype, row_counts[i], cols));
          products.push_back({mats.back().on(dev, 0), dev.zeros<float>(size_t(row_counts[i]))});
        }
        const std::string what = "matmul_many " + std::string(dtype_name(dtype)) + " x" + std::to_string(n) + " cols " +
                                 std::to_string(cols) + " stages " + std::to_string(stages);
        INFO(what);
        REQUIRE(gpu::matmul_many_applies(products, xd, policy));
        gpu::matmul_many(products, xd, dev.stream(), policy);
        for (size_t i = 0; i < n; ++i) {
          const int64_t rows = row_counts[i];
          std::vector<float> want(static_cast<size_t>(rows));
          cpu::matmul(pool, mats[i].ref(), x.data(), cols, want.data(), rows, 1);
          const std::vector<float> got = dev.get(products[i].y, size_t(rows));
          check_close(what + " product " + std::to_string(i), got, want, matmul_threshold(dtype));
          float* alone = dev.zeros<float>(size_t(rows));
          gpu::matmul(products[i].w, xd, cols, alone, rows, 1, dev.stream(), policy);
          CHECK(dev.get(alone, size_t(rows)) == got);
        }
      }
  // Refused, not launched: matrices of two encodings or widths, too many, none, or a policy that
  // sends one token to the matrix cores.
  Rng rng(seed);
  gpu::test::Device dev;
  const HostMat a = random_mat(rng, Dtype::BF16, 16, 256), b = random_mat(rng, Dtype::F32, 16, 256),
                c = random_mat(rng, Dtype::BF16, 16, 512);
  const float* xd = dev.put(rng.floats(512));
  float* yd = dev.zeros<float>(16);
  const gpu::MatProduct mixed[] = {{a.on(dev, 0), yd}, {b.on(dev, 0), yd}};
  const gpu::MatProduct widths[] = {{a.on(dev, 0), yd}, {c.on(dev, 0), yd}};
  const std::vector<gpu::MatProduct> many(gpu::kMaxManyProducts + 1, gpu::MatProduct{a.on(dev, 0), yd});
  CHECK_FALSE(gpu::matmul_many_applies(mixed, xd, kCudaCores));
  CHECK_FALSE(gpu::matmul_many_applies(widths, xd, kCudaCores));
  CHECK_FALSE(gpu::matmul_many_applies(many, xd, kCudaCores));
  CHECK_FALSE(gpu::matmul_many_applies({}, xd, kCudaCores));
  const gpu::MatProduct one[] = {{a.on(dev, 0), yd}};
  CHECK_FALSE(gpu::matmul_many_applies(one, xd, gpu::GemmPolicy{.matrix_min_tokens = 1}));
  CHECK_THROWS_WITH_AS(gpu::matmul_many(mixed, xd, dev.stream(), kCudaCores),
                       doctest::Contains("single-token kernel does not take together"), gpu::GpuError);
}
