// The dense GPU kernels against their CPU twins: matmul in every encoding, the element-wise and
// normalisation ops, mHC and the output head.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "deepseek4/cpu/gemm.hpp"
#include "deepseek4/cpu/ops.hpp"
#include "deepseek4/cpu/rope.hpp"
#include "deepseek4/forward/hc.hpp"
#include "deepseek4/forward/head.hpp"
#include "deepseek4/hip/hc.hpp"
#include "deepseek4/hip/head.hpp"
#include "deepseek4/hip/ops.hpp"
#include "kernel_test_support.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::gpu::test;

namespace {

const Dtype kAllDtypes[] = {Dtype::F32, Dtype::BF16, Dtype::F16, Dtype::F8_E4M3, Dtype::I8};

// The matmul of one configuration: w rows [band_start, band_start + band_rows) of a stored
// [rows, cols] matrix (band_rows 0: the whole matrix), x rows ld_x apart, y rows ld_y apart.
void check_matmul(Dtype dtype, int64_t rows, int64_t cols, int64_t n_tokens, int64_t band_start, int64_t band_rows,
                  int64_t x_pad, uint64_t shift, uint64_t seed) {
  Rng rng(seed);
  gpu::test::Device dev;
  cpu::ThreadPool pool(1);
  const HostMat hm = random_mat(rng, dtype, rows, cols);
  cpu::MatRef w = hm.ref(), wd = hm.on(dev, shift);
  if (band_rows) {
    w = w.row_band(band_start, band_rows);
    wd = wd.row_band(band_start, band_rows);
  }
  const int64_t ld_x = cols + x_pad, ld_y = w.rows + 2;
  const std::vector<float> x = rng.floats(size_t(n_tokens * ld_x));
  std::vector<float> want(size_t(n_tokens * ld_y), 0.0f);
  cpu::matmul(pool, w, x.data(), ld_x, want.data(), ld_y, n_tokens);
  float* yd = dev.zeros<float>(want.size());
  gpu::matmul(wd, dev.put(x), ld_x, yd, ld_y, n_tokens, dev.stream(), kCudaCores);
  check_close("matmul " + std::string(dtype_name(dtype)) + " W" + shape_str({rows, cols}) + " band " +
                  shape_str({band_start, band_rows}) + " tokens " + std::to_string(n_tokens) + " ld_x " +
                  std::to_string(ld_x) + " shift " + std::to_string(shift),
              dev.get(yd, want.size()), want, matmul_threshold(dtype));
}

}  // namespace

TEST_CASE("gpu matmul matches cpu::matmul for every encoding, batch and shape") {
  uint64_t seed = 1;
  for (Dtype dtype : kAllDtypes) {
    const bool fp4 = dtype == Dtype::I8;  // FP4 rows must be whole 32-column groups
    const int64_t shapes[][2] = {{37, 64}, {130, fp4 ? 288 : 257}, {300, fp4 ? 1024 : 1000}, {5, fp4 ? 32 : 3}};
    for (const auto& shape : shapes)
      for (int64_t n_tokens : {1, 3, 8, 13})
        for (int64_t x_pad : {0, 1}) check_matmul(dtype, shape[0], shape[1], n_tokens, 0, 0, x_pad, 0, seed++);
    // Enough rows that the launcher gives each tile of rows one warp instead of one block.
    for (int64_t n_tokens : {1, 3, 8}) check_matmul(dtype, 20000, 64, n_tokens, 0, 0, 0, 0, seed++);
    // A band crossing an FP8 128-row block boundary, and a weight whose rows start off alignment.
    for (int64_t n_tokens : {1, 3, 8, 13}) {
      check_matmul(dtype, 300, fp4 ? 512 : 520, n_tokens, 100, 150, 0, 0, seed++);
      check_matmul(dtype, 67, fp4 ? 320 : 333, n_tokens, 0, 0, 0, 4, seed++);
    }
    // Rows of whole 32-chunk groups: one token takes the kernel with x in registers (1 to 8
    // slices, 1 to 8 chunks per thread by encoding), a band of it crossing FP8 scale blocks, and
    // enough rows for many blocks.
    for (int64_t cols : {1024, 4096, 8192})
      for (int64_t n_tokens : {1, 2}) check_matmul(dtype, 70, cols, n_tokens, 0, 0, 0, 0, seed++);
    check_matmul(dtype, 300, 1024, 1, 100, 150, 0, 0, seed++);
    check_matmul(dtype, 20000, 1024, 1, 0, 0, 0, 0, seed++);
  }
}

namespace {

// matmul_grouped against cpu::matmul band by band: `groups` bands of rpg rows of a stored
// [groups*rpg, cols] matrix, band g reading x columns [g*x_stride, g*x_stride + cols).
void check_matmul_grouped(Dtype dtype, int64_t groups, int64_t rpg, int64_t cols, int64_t n_tokens, uint64_t shift,
                          uint64_t seed) {
  Rng rng(seed);
  gpu::test::Device dev;
  cpu::ThreadPool pool(1);
  const HostMat hm = random_mat(rng, dtype, groups * rpg, cols);
  const cpu::MatRef w = hm.ref(), wd = hm.on(dev, shift);
  const int64_t x_stride = cols + 4, ld_x = groups * x_stride, ld_y = groups * rpg + 2;
  const std::vector<float> x = rng.floats(size_t(n_tokens * ld_x));
  std::vector<float> want(size_t(n_tokens * ld_y), 0.0f);
  for (int64_t g = 0; g < groups; ++g)
    cpu::matmul(pool, w.row_band(g * rpg, rpg), x.data() + g * x_stride, ld_x, want.data() + g * rpg, ld_y, n_tokens);
  float* yd = dev.zeros<float>(want.size());
  gpu::matmul_grouped(wd, dev.put(x), ld_x, x_stride, rpg, groups, yd, ld_y, n_tokens, dev.stream());
  check_close("matmul_grouped " + std::string(dtype_name(dtype)) + " groups " + std::to_string(groups) + " x " +
                  shape_str({rpg, cols}) + " tokens " + std::to_string(n_tokens) + " shift " + std::to_string(shift),
              dev.get(yd, want.size()), want, matmul_threshold(dtype));
}

}  // namespace

TEST_CASE("gpu matmul_grouped matches cpu::matmul on every band") {
  uint64_t seed = 500;
  for (Dtype dtype : kAllDtypes)
    for (int64_t n_tokens : {1, 3, 8}) {
      // Bands crossing FP8 128-row scale blocks; many rows (one warp per tile); rows off alignment.
      check_matmul_grouped(dtype, 4, 160, 256, n_tokens, 0, seed++);
      check_matmul_grouped(dtype, 8, 2048, 64, n_tokens, 0, seed++);
      check_matmul_grouped(dtype, 3, 40, dtype == Dtype::I8 ? 96 : 100, n_tokens, 4, seed++);
      // Single-token rows of whole 32-chunk groups, groups of a row count no block size divides evenly.
      check_matmul_grouped(dtype, 3, 100, 1024, n_tokens, 0, seed++);
    }
}

TEST_CASE("gpu rms_norm matches cpu::rms_norm, with and without weight, in place") {
  Rng rng(11);
  gpu::test::Device dev;
  // Rows of whole float4s (short and mHC-long) and rows that are neither whole nor aligned.
  const int64_t shapes[][3] = {{5, 1000, 1024}, {3, 16384, 16384}, {4, 513, 515}};
  for (const auto& shape : shapes) {
    const int64_t rows = shape[0], n = shape[1], ld = shape[2];
    const std::vector<float> x = rng.floats(size_t(rows * ld), -3.0f, 3.0f), w = rng.floats(size_t(n), 0.5f, 1.5f);
    for (bool weighted : {true, false}) {
      std::vector<float> want = x;
      for (int64_t r = 0; r < rows; ++r)
        cpu::rms_norm(x.data() + r * ld, n, weighted ? w.data() : nullptr, 1e-6, want.data() + r * ld);
      float* xd = dev.put(x);
      gpu::rms_norm(xd, rows, n, ld, weighted ? dev.put(w) : nullptr, 1e-6f, xd, dev.stream());
      check_close("rms_norm rows " + std::to_string(rows) + " n " + std::to_string(n) + " ld " + std::to_string(ld) +
                      " F32 " + (weighted ? "weighted" : "unweighted"),
                  dev.get(xd, x.size()), want, 1e-6);
    }
  }
}

TEST_CASE("gpu matmul_normed_input matches cpu::rms_norm then cpu::matmul for one token") {
  // Decode's q latent row into wq_b (FP8 1024 columns, 2 slices), and every encoding the
  // single-token kernel takes at 1 to 8 slices, weighted and unweighted; x far from unit scale so a
  // missing or misapplied r shows at once.
  uint64_t seed = 1700;
  const int64_t shapes[][2] = {{4096, 1024}, {300, 4096}, {70, 8192}, {64, 1024}};
  for (Dtype dtype : {Dtype::F32, Dtype::BF16, Dtype::F8_E4M3, Dtype::I8})
    for (const auto& shape : shapes)
      for (bool weighted : {true, false}) {
        Rng rng(seed++);
        gpu::test::Device dev;
        cpu::ThreadPool pool(1);
        const int64_t rows = shape[0], cols = shape[1];
        const HostMat hm = random_mat(rng, dtype, rows, cols);
        const std::vector<float> x = rng.floats(size_t(cols), -40.0f, 40.0f), g = rng.floats(size_t(cols), 0.5f, 1.5f);
        std::vector<float> xn(static_cast<size_t>(cols)), want(static_cast<size_t>(rows));
        cpu::rms_norm(x.data(), cols, weighted ? g.data() : nullptr, 1e-6, xn.data());
        cpu::matmul(pool, hm.ref(), xn.data(), cols, want.data(), rows, 1);
        const cpu::MatRef wd = hm.on(dev, 0);
        const float* xd = dev.put(x);
        const float* gd = weighted ? dev.put(g) : nullptr;
        const std::string what = "matmul_normed_input " + std::string(dtype_name(dtype)) + " W" +
                                 shape_str({rows, cols}) + (weighted ? " weighted" : " unweighted");
        INFO(what);
        REQUIRE(gpu::normed_input_applies(wd, xd, gd, kCudaCores));
        float* yd = dev.zeros<float>(size_t(rows));
        gpu::matmul_normed_input(wd, xd, gd, 1e-6f, yd, dev.stream(), kCudaCores);
        check_close(what, dev.get(yd, size_t(rows)), want, matmul_threshold(dtype));
      }
  // A row the kernel does not take (not whole 32-chunk groups) is refused, not launched.
  Rng rng(seed);
  gpu::test::Device dev;
  const HostMat hm = random_mat(rng, Dtype::F32, 16, 100);
  const float* xd = dev.put(rng.floats(100));
  CHECK_FALSE(gpu::normed_input_applies(hm.on(dev, 0), xd, nullptr, kCudaCores));
  float* yd = dev.zeros<float>(16);
  CHECK_THROWS_WITH_AS(gpu::matmul_normed_input(hm.on(dev, 0), xd, nullptr, 1e-6f, yd, dev.stream(), kCudaCores),
                       doctest::Contains("single-token kernel does not take"), gpu::GpuError);
}

TEST_CASE("gpu rope_rotate matches cpu::Rope::rotate in both directions") {
  Rng rng(12);
  gpu::test::Device dev;
  const int rope_dim = 16, half = rope_dim / 2;
  const cpu::Rope rope(cpu::RopeSpec{160000.0, true, 16.0, 64.0, 32.0, 1.0}, rope_dim);
  const int64_t positions = 40, S = 3, heads = 4, ld_head = 40, ld_token = heads * ld_head + 8, col0 = 24;
  const int64_t pos0 = 7, pos_step = 4;
  std::vector<float> cos(size_t(positions * half)), sin(cos.size());
  for (int64_t p = 0; p < positions; ++p) rope.angles(p, cos.data() + p * half, sin.data() + p * half);
  const float* cos_d = dev.put(cos);
  const float* sin_d = dev.put(sin);
  const std::vector<float> x = rng.floats(size_t(S * ld_token));
  for (bool inverse : {false, true}) {
    std::vector<float> want = x;
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t pos = pos0 + s * pos_step;
        rope.rotate(want.data() + s * ld_token + h * ld_head + col0, cos.data() + pos * half, sin.data() + pos * half,
                    inverse);
      }
    float* xd = dev.put(x);
    gpu::rope_rotate(xd, S, heads, ld_token, ld_head, col0, rope_dim, cos_d, sin_d, pos0, pos_step, inverse,
                     dev.stream());
    check_close(std::string("rope_rotate S 3 heads 4 rope 16 F32 ") + (inverse ? "inverse" : "forward"),
                dev.get(xd, x.size()), want, 1e-6);
  }
}

TEST_CASE("gpu matmul_swiglu matches cpu::matmul twice then cpu::swiglu_clamped, fused or not") {
  uint64_t seed = 700;
  for (Dtype dtype : kAllDtypes)
    for (int64_t cols : {1024, 1000})  // whole 32-chunk rows (one fused launch at one token) or not
      for (int64_t n_tokens : {1, 3}) {
        Rng rng(seed++);
        gpu::test::Device dev;
        const int64_t rows = 200;
        if (dtype == Dtype::I8 && cols % 32) continue;  // FP4 rows are whole 32-column groups
        const HostMat w1 = random_mat(rng, dtype, rows, cols), w3 = random_mat(rng, dtype, rows, cols);
        const std::vector<float> x = rng.floats(size_t(n_tokens * cols));
        const std::vector<float> want = cpu_swiglu_product(w1.ref(), w3.ref(), x, n_tokens, 3.0f);
        float* h1 = dev.zeros<float>(want.size());
        float* h3 = dev.zeros<float>(want.size());
        gpu::matmul_swiglu(w1.on(dev, 0), w3.on(dev, 0), dev.put(x), cols, n_tokens, 3.0f, h1, h3, dev.stream(),
                           kCudaCores);
        check_close("matmul_swiglu " + std::string(dtype_name(dtype)) + " W" + shape_str({rows, cols}) + " tokens " +
                        std::to_string(n_tokens),
                    dev.get(h1, want.size()), want, matmul_threshold(dtype));
      }
}

TEST_CASE("gpu swiglu_clamped matches cpu::swiglu_clamped across the clamp") {
  Rng rng(13);
  gpu::test::Device dev;
  const int64_t n = 3001;
  const std::vector<float> g = rng.floats(size_t(n), -20.0f, 20.0f), u = rng.floats(size_t(n), -20.0f, 20.0f);
  std::vector<float> want(static_cast<size_t>(n));
  cpu::swiglu_clamped(g.data(), u.data(), n, 7.0f, want.data());
  float* out = dev.zeros<float>(uint64_t(n));
  gpu::swiglu_clamped(dev.put(g), dev.put(u), n, 7.0f, out, dev.stream());
  check_close("swiglu_clamped n 3001 limit 7 F32", dev.get(out, uint64_t(n)), want, 1e-6);
}

TEST_CASE("gpu embed decodes table rows bit for bit like cpu::decode_row (NaN and subnormal codes too)") {
  uint64_t seed = 14;
  for (Dtype dtype : kAllDtypes) {
    Rng rng(seed++);
    gpu::test::Device dev;
    const int64_t vocab = 50, cols = dtype == Dtype::I8 ? 160 : 135, S = 4, copies = 3;
    const HostMat table = random_mat(rng, dtype, vocab, cols, 1.0f, true);
    const std::vector<int32_t> tokens = {3, 49, 0, 3};
    float* X = dev.zeros<float>(uint64_t(S * copies * cols));
    gpu::embed(table.on(dev), dev.put(tokens), S, copies, X, dev.stream());
    const std::vector<float> got = dev.get(X, uint64_t(S * copies * cols));
    std::vector<float> row(static_cast<size_t>(cols));
    size_t mismatches = 0;
    for (int64_t s = 0; s < S; ++s) {
      cpu::decode_row(table.ref(), tokens[size_t(s)], 0, cols, row.data());
      for (int64_t i = 0; i < copies; ++i)
        for (int64_t c = 0; c < cols; ++c) {
          const float a = got[size_t((s * copies + i) * cols + c)], b = row[size_t(c)];
          // NaN payloads may differ between vendors' arithmetic; every other value is exact.
          const bool same = (std::isnan(a) && std::isnan(b)) || float_to_bits(a) == float_to_bits(b);
          mismatches += same ? 0 : 1;
        }
    }
    INFO("embed " << dtype_name(dtype) << " table " << shape_str({vocab, cols}) << " S 4 copies 3");
    CHECK(mismatches == 0);
  }
}

TEST_CASE("gpu stream_mean matches the CPU Model's mean of the streams") {
  Rng rng(15);
  gpu::test::Device dev;
  const int32_t n = 4;
  const int64_t d = 777;
  const std::vector<float> streams = rng.floats(size_t(n * d), -5.0f, 5.0f);
  std::vector<float> want(static_cast<size_t>(d));
  for (int64_t e = 0; e < d; ++e) {
    float sum = 0.0f;
    for (int32_t i = 0; i < n; ++i) sum += streams[size_t(i * d + e)];
    want[size_t(e)] = sum / float(n);
  }
  float* mean = dev.zeros<float>(uint64_t(d));
  gpu::stream_mean(dev.put(streams), n, d, mean, dev.stream());
  check_close("stream_mean n 4 d 777 F32", dev.get(mean, uint64_t(d)), want, 1e-7);
}

namespace {

Config hc_config() {
  Config c;
  c.hidden_size = 96;
  c.hc_mult = 4;
  c.hc_sinkhorn_iters = 20;
  c.hc_eps = 1e-6;
  c.rms_norm_eps = 1e-6;
  c.vocab_size = 300;
  c.num_attention_heads = 2;
  c.head_dim = 16;
  c.q_lora_rank = 8;
  c.o_groups = 1;
  c.o_lora_rank = 8;
  c.n_routed_experts = 8;
  c.num_experts_per_tok = 2;
  c.moe_intermediate_size = 32;
  c.index_n_heads = 2;
  c.index_head_dim = 8;
  c.index_topk = 2;
  return c;
}

// Host params and their device twin for one mHC site with `n_mix` mixes.
struct HcSite {
  HostMat fn;
  HcParams cpu;
  gpu::GpuHcParams dev;
  HcSite(Rng& rng, gpu::test::Device& d, const Config& c, int64_t n_mix, int64_t n_scale) {
    const int64_t nd = int64_t(c.hc_mult) * c.hidden_size;
    fn = random_mat(rng, Dtype::F32, n_mix, nd, 4.0f);
    cpu.fn = fn.ref();
    cpu.base = rng.floats(size_t(n_mix), -0.5f, 0.5f);
    cpu.scale = rng.floats(size_t(n_scale), 0.8f, 1.2f);
    dev.fn = fn.on(d);
    dev.base = d.put(cpu.base);
    dev.scale = d.put(cpu.scale);
  }
};

}  // namespace

TEST_CASE("gpu hc_pre and hc_post match forward/hc.cpp") {
  // 5 tokens take a block per token; 19 the prompt path (one block of 32 tokens, partly empty).
  for (const int64_t S : {int64_t(5), int64_t(19)}) {
    CAPTURE(S);
    Rng rng(16);
    gpu::test::Device dev;
    cpu::ThreadPool pool(1);
    const Config c = hc_config();
    const int64_t N = c.hc_mult, D = c.hidden_size, n_mix = (2 + N) * N;
    const HcSite site(rng, dev, c, n_mix, 3);
    const std::vector<float> X = rng.floats(size_t(S * N * D), -2.0f, 2.0f);
    std::vector<float> flat(size_t(S * N * D)), mixes(size_t(S * n_mix)), pre(size_t(S * N));
    std::vector<float> post(size_t(S * N)), comb(size_t(S * N * N)), u(size_t(S * D));
    hc_pre(pool, site.cpu, c, X.data(), S, HcScratch{flat.data(), mixes.data(), pre.data()}, post.data(), comb.data(),
           u.data());

    const gpu::GpuHcScratch hs = gpu::allocate_hc_scratch(c, S, dev.arena());
    float* Xd = dev.put(X);
    float* post_d = dev.zeros<float>(post.size());
    float* comb_d = dev.zeros<float>(comb.size());
    float* u_d = dev.zeros<float>(u.size());
    gpu::hc_pre(site.dev, c, Xd, S, hs, post_d, comb_d, u_d, dev.stream());
    check_close("hc_pre post", dev.get(post_d, post.size()), post, 1e-5);
    check_close("hc_pre comb", dev.get(comb_d, comb.size()), comb, 1e-5);
    check_close("hc_pre u", dev.get(u_d, u.size()), u, 1e-5);

    // hc_site: the same weights and, in the same launch, rms_norm(u) * norm from the finishing block.
    const std::vector<float> norm = rng.floats(size_t(D), 0.5f, 1.5f);
    std::vector<float> xn_want(u.size());
    for (int64_t s = 0; s < S; ++s)
      cpu::rms_norm(u.data() + s * D, D, norm.data(), double(float(c.rms_norm_eps)), xn_want.data() + s * D);
    float* xn_d = dev.zeros<float>(u.size());
    gpu::HcInput in;
    in.X = Xd;
    gpu::hc_site(site.dev, c, in, S, hs, post_d, comb_d, dev.put(norm), xn_d, dev.stream());
    check_close("hc_site post", dev.get(post_d, post.size()), post, 1e-5);
    check_close("hc_site comb", dev.get(comb_d, comb.size()), comb, 1e-5);
    check_close("hc_site xn", dev.get(xn_d, u.size()), xn_want, 1e-5);

    // hc_post on the CPU's weights, so only the mixing itself is compared.
    const std::vector<float> block_out = rng.floats(size_t(S * D));
    std::vector<float> want(size_t(S * N * D));
    hc_post(block_out.data(), X.data(), post.data(), comb.data(), S, uint32_t(N), uint32_t(D), want.data());
    float* out_d = dev.zeros<float>(want.size());
    gpu::hc_post(dev.put(block_out), Xd, dev.put(post), dev.put(comb), S, uint32_t(N), uint32_t(D), out_d,
                 dev.stream());
    check_close("hc_post", dev.get(out_d, want.size()), want, 1e-6);
  }
}

TEST_CASE("gpu hc_site and hc_head for one token collapse in the weights launch and match forward/hc.cpp") {
  // One token takes the fused path (every block collapses its own columns after the finisher's
  // weights): 4 streams (the unrolled kernel) and 2 or 3 (the general one), widths that leave the
  // last block partly empty, each site launched twice so the ticket and flag are reused (the second
  // time with the Sinkhorn on a side stream).
  struct Shape {
    uint32_t n;
    int64_t d;
  };
  for (const Shape shape : {Shape{4, 96}, Shape{4, 200}, Shape{3, 130}, Shape{2, 64}}) {
    Rng rng(40 + shape.n * 7 + uint64_t(shape.d));
    gpu::test::Device dev;
    cpu::ThreadPool pool(1);
    Config c = hc_config();
    c.hc_mult = shape.n;
    c.hidden_size = shape.d;
    const int64_t N = c.hc_mult, D = c.hidden_size, n_mix = (2 + N) * N;
    const std::string tag = "N " + std::to_string(N) + " D " + std::to_string(D);
    const HcSite site(rng, dev, c, n_mix, 3);
    const HcSite head(rng, dev, c, N, 1);
    const gpu::GpuHcScratch hs = gpu::allocate_hc_scratch(c, 1, dev.arena());
    const std::vector<float> norm = rng.floats(size_t(D), 0.5f, 1.5f);
    const float* norm_d = dev.put(norm);
    std::vector<float> flat(size_t(N * D)), mixes(static_cast<size_t>(n_mix)), pre(static_cast<size_t>(N));
    for (int rep = 0; rep < 2; ++rep) {
      // The previous site's hc_post folded into the read of the streams.
      const std::vector<float> X = rng.floats(size_t(N * D), -2.0f, 2.0f);
      const std::vector<float> block_out = rng.floats(size_t(D), -1.0f, 1.0f);
      const std::vector<float> prev_post = rng.floats(size_t(N), 0.1f, 1.9f);
      const std::vector<float> prev_comb = rng.floats(size_t(N * N), 0.0f, 0.5f);
      std::vector<float> Xout(size_t(N * D));
      hc_post(block_out.data(), X.data(), prev_post.data(), prev_comb.data(), 1, uint32_t(N), uint32_t(D), Xout.data());
      std::vector<float> post(static_cast<size_t>(N)), comb(size_t(N * N));
      std::vector<float> u(static_cast<size_t>(D)), xn_want(static_cast<size_t>(D));
      hc_pre(pool, site.cpu, c, Xout.data(), 1, HcScratch{flat.data(), mixes.data(), pre.data()}, post.data(),
             comb.data(), u.data());
      cpu::rms_norm(u.data(), D, norm.data(), double(float(c.rms_norm_eps)), xn_want.data());

      gpu::HcInput in;
      in.X = dev.put(X);
      in.block_out = dev.put(block_out);
      in.post = dev.put(prev_post);
      in.comb = dev.put(prev_comb);
      in.Xout = dev.zeros<float>(Xout.size());
      float* post_d = dev.zeros<float>(post.size());
      float* comb_d = dev.zeros<float>(comb.size());
      float* xn_d = dev.zeros<float>(xn_want.size());
      // The second time the Sinkhorn runs on a side stream, joined before comb is read.
      gpu::SideStream comb_side;
      gpu::hc_site(site.dev, c, in, 1, hs, post_d, comb_d, norm_d, xn_d, dev.stream(), rep == 1 ? &comb_side : nullptr);
      comb_side.join(dev.stream());
      check_close("one-token hc_site Xout " + tag, dev.get(in.Xout, Xout.size()), Xout, 1e-6);
      check_close("one-token hc_site post " + tag, dev.get(post_d, post.size()), post, 1e-5);
      check_close("one-token hc_site comb " + tag, dev.get(comb_d, comb.size()), comb, 1e-5);
      check_close("one-token hc_site xn " + tag, dev.get(xn_d, xn_want.size()), xn_want, 1e-5);

      // The head on the same streams: h and the final norm of h.
      std::vector<float> head_mixes(static_cast<size_t>(N)), h(static_cast<size_t>(D)), hn_want(static_cast<size_t>(D));
      hc_head(pool, head.cpu, c, Xout.data(), 1, HcScratch{flat.data(), head_mixes.data(), pre.data()}, h.data());
      cpu::rms_norm(h.data(), D, norm.data(), double(float(c.rms_norm_eps)), hn_want.data());
      float* h_d = dev.zeros<float>(h.size());
      float* hn_d = dev.zeros<float>(h.size());
      gpu::hc_head(head.dev, c, in.Xout, 1, hs, h_d, dev.stream(), norm_d, hn_d);
      check_close("one-token hc_head h " + tag, dev.get(h_d, h.size()), h, 1e-5);
      check_close("one-token hc_head norm " + tag, dev.get(hn_d, h.size()), hn_want, 1e-5);
    }
  }
}

namespace {

// The prompt path for S tokens of n streams of width d (a block per 32 tokens and chunk, then a
// finish kernel): a site with the previous hc_post folded in (Xout, last_mean, post, comb, xn),
// hc_pre on the streams as they are, and the head (n rows of fn), against forward/hc.cpp.
void check_prompt_hc(uint32_t n, int64_t d, int64_t S, bool comb_on_side) {
  Rng rng(60 + n * 7 + uint64_t(d) + uint64_t(S));
  gpu::test::Device dev;
  cpu::ThreadPool pool(1);
  Config c = hc_config();
  c.hc_mult = n;
  c.hidden_size = d;
  const int64_t N = n, D = d, n_mix = (2 + N) * N;
  const std::string tag = "N " + std::to_string(N) + " D " + std::to_string(D) + " S " + std::to_string(S);
  const HcSite site(rng, dev, c, n_mix, 3);
  const HcSite head(rng, dev, c, N, 1);
  const std::vector<float> X = rng.floats(size_t(S * N * D), -2.0f, 2.0f);
  const std::vector<float> block_out = rng.floats(size_t(S * D), -1.0f, 1.0f);
  const std::vector<float> prev_post = rng.floats(size_t(S * N), 0.1f, 1.9f);
  const std::vector<float> prev_comb = rng.floats(size_t(S * N * N), 0.0f, 0.5f);
  const std::vector<float> norm = rng.floats(size_t(D), 0.5f, 1.5f);
  std::vector<float> Xout(X.size()), mean(static_cast<size_t>(D));
  hc_post(block_out.data(), X.data(), prev_post.data(), prev_comb.data(), S, n, uint32_t(D), Xout.data());
  for (int64_t e = 0; e < D; ++e) {  // the last token's mean over the streams: float sums in stream order
    float sum = Xout[size_t((S - 1) * N * D + e)];
    for (int64_t k = 1; k < N; ++k) sum += Xout[size_t(((S - 1) * N + k) * D + e)];
    mean[size_t(e)] = sum / float(N);
  }
  std::vector<float> flat(X.size()), mixes(size_t(S * n_mix)), pre(size_t(S * N));
  std::vector<float> post(size_t(S * N)), comb(size_t(S * N * N)), u(size_t(S * D)), xn(u.size()), h(u.size());
  hc_pre(pool, site.cpu, c, Xout.data(), S, HcScratch{flat.data(), mixes.data(), pre.data()}, post.data(), comb.data(),
         u.data());
  for (int64_t s = 0; s < S; ++s)
    cpu::rms_norm(u.data() + s * D, D, norm.data(), double(float(c.rms_norm_eps)), xn.data() + s * D);

  const gpu::GpuHcScratch hs = gpu::allocate_hc_scratch(c, S, dev.arena());
  gpu::HcInput in;
  in.X = dev.put(X);
  in.block_out = dev.put(block_out);
  in.post = dev.put(prev_post);
  in.comb = dev.put(prev_comb);
  in.Xout = dev.zeros<float>(Xout.size());
  in.last_mean = dev.zeros<float>(mean.size());
  float* post_d = dev.zeros<float>(post.size());
  float* comb_d = dev.zeros<float>(comb.size());
  float* xn_d = dev.zeros<float>(xn.size());
  gpu::SideStream comb_side;  // with comb_on_side the Sinkhorn runs there, joined before comb is read
  gpu::hc_site(site.dev, c, in, S, hs, post_d, comb_d, dev.put(norm), xn_d, dev.stream(),
               comb_on_side ? &comb_side : nullptr);
  comb_side.join(dev.stream());
  check_close("prompt hc_site Xout " + tag, dev.get(in.Xout, Xout.size()), Xout, 1e-6);
  check_close("prompt hc_site last_mean " + tag, dev.get(in.last_mean, mean.size()), mean, 1e-6);
  check_close("prompt hc_site post " + tag, dev.get(post_d, post.size()), post, 1e-5);
  check_close("prompt hc_site comb " + tag, dev.get(comb_d, comb.size()), comb, 1e-5);
  check_close("prompt hc_site xn " + tag, dev.get(xn_d, xn.size()), xn, 1e-5);

  float* u_d = dev.zeros<float>(u.size());
  gpu::hc_pre(site.dev, c, in.Xout, S, hs, post_d, comb_d, u_d, dev.stream());
  check_close("prompt hc_pre post " + tag, dev.get(post_d, post.size()), post, 1e-5);
  check_close("prompt hc_pre comb " + tag, dev.get(comb_d, comb.size()), comb, 1e-5);
  check_close("prompt hc_pre u " + tag, dev.get(u_d, u.size()), u, 1e-5);

  hc_head(pool, head.cpu, c, Xout.data(), S, HcScratch{flat.data(), mixes.data(), pre.data()}, h.data());
  float* h_d = dev.zeros<float>(h.size());
  gpu::hc_head(head.dev, c, in.Xout, S, hs, h_d, dev.stream());
  check_close("prompt hc_head h " + tag, dev.get(h_d, h.size()), h, 1e-5);
}

}  // namespace

TEST_CASE("gpu mHC prompt path (blocks of 32 tokens, then one block per token) matches forward/hc.cpp") {
  // 8 tokens: one block, mostly empty; 45 and 130: a tail block (13, 2 tokens). 4 streams take the
  // unrolled kernels (24 rows; the head's 4), 3 and 16 the general one (16: 288 rows in passes of
  // 24, the Sinkhorn over the whole block); every width leaves the last chunk partly empty.
  struct Shape {
    uint32_t n;
    int64_t d;
  };
  for (const Shape shape : {Shape{4, 96}, Shape{3, 130}, Shape{16, 40}})
    for (const int64_t S : {int64_t(8), int64_t(45), int64_t(130)}) check_prompt_hc(shape.n, shape.d, S, S == 45);
}

TEST_CASE("gpu hc_head and output_head match forward/hc.cpp and forward/head.cpp") {
  Rng rng(17);
  gpu::test::Device dev;
  cpu::ThreadPool pool(1);
  const Config c = hc_config();
  const int64_t S = 3, N = c.hc_mult, D = c.hidden_size, V = c.vocab_size;
  const HcSite site(rng, dev, c, N, 1);
  const std::vector<float> X = rng.floats(size_t(S * N * D), -2.0f, 2.0f);

  std::vector<float> flat(size_t(S * N * D)), mixes(size_t(S * N)), pre(size_t(S * N)), h(size_t(S * D));
  hc_head(pool, site.cpu, c, X.data(), S, HcScratch{flat.data(), mixes.data(), pre.data()}, h.data());
  const gpu::GpuHcScratch hs = gpu::allocate_hc_scratch(c, S, dev.arena());
  float* Xd = dev.put(X);
  float* h_d = dev.zeros<float>(h.size());
  gpu::hc_head(site.dev, c, Xd, S, hs, h_d, dev.stream());
  check_close("hc_head S 3 N 4 D 96", dev.get(h_d, h.size()), h, 1e-5);

  for (Dtype head_dtype : {Dtype::BF16, Dtype::F32}) {
    const HostMat head = random_mat(rng, head_dtype, V, D);
    ModelParams mp;
    mp.head = head.ref();
    mp.norm = rng.floats(size_t(D), 0.8f, 1.2f);
    mp.hc_head = site.cpu;
    Scratch sc;
    sc.allocate(c, S, 1, 1, 1);
    std::vector<float> want(size_t(S * V));
    output_head(pool, mp, c, X.data(), S, sc, want.data());

    gpu::GpuModelParams gp;
    gp.head = head.on(dev);
    gp.norm = dev.put(mp.norm);
    gp.hc_head = site.dev;
    float* u = dev.zeros<float>(uint64_t(S * D));
    float* xn = dev.zeros<float>(uint64_t(S * D));
    float* logits = dev.zeros<float>(want.size());
    gpu::output_head(gp, c, Xd, S, hs, u, xn, logits, dev.stream());
    check_close("output_head S 3 vocab 300 D 96 head " + std::string(dtype_name(head_dtype)),
                dev.get(logits, want.size()), want, 2e-5);
  }
}

TEST_CASE("gpu greedy_token picks the first largest logit across its blocks and reports the first NaN") {
  Rng rng(31);
  gpu::test::Device dev;
  int32_t* work = dev.zeros<int32_t>(uint64_t(gpu::kGreedyWorkInts));
  for (int64_t V : {int64_t(1), int64_t(300), int64_t(129280), int64_t(1000003)}) {
    for (int round = 0; round < 4; ++round) {
      // Few distinct values: the maximum repeats in many blocks, so only the index order decides.
      std::vector<float> logits(static_cast<size_t>(V));
      for (float& v : logits) v = float(rng.below(5)) - (round == 3 ? INFINITY : 0.0f);
      int64_t nan_at = -1;
      if (round == 2) {
        nan_at = rng.below(int32_t(V));
        logits[size_t(nan_at)] = NAN;
      }
      int64_t want = 0;
      for (int64_t i = 0; i < V; ++i)
        if (!std::isnan(logits[size_t(i)]) &&
            (std::isnan(logits[size_t(want)]) || logits[size_t(i)] > logits[size_t(want)]))
          want = i;
      gpu::greedy_token(dev.put(logits), V, work, dev.stream());
      const std::vector<int32_t> got = dev.get(work, 3);
      INFO("V ", V, " round ", round);
      if (nan_at < 0) CHECK(got[0] == want);
      CHECK(got[1] == nan_at);
      CHECK(got[2] == 0);  // the ticket is ready for the next call
    }
  }
}
