// The library path's kept weights (arch option library_weight_cache_mib) change where a dense
// weight's bf16 copy lives, never its bits: a prompt whose products go to the library gives the
// same logits with the cache off, with the cache filling (first prompt) and with it hit (second).
#include <doctest/doctest.h>

#include <vector>

#include "deepseek4/hip/gemm_policy.hpp"
#include "tiny_gpu_run.hpp"

using namespace moepage::ds4;
using namespace moepage::ds4::test;

namespace {

// The prompt's logits, twice over one model (reset between): the second prompt finds the first's
// kept weights.
std::vector<std::vector<float>> two_prompts(Tiny& t, uint32_t cache_mib, uint64_t* kept_bytes) {
  const std::vector<int32_t> prompt = {1, 17, 300, 4000, 42, 7, 99, 2};
  ModelOptions options{64, 8};
  options.library_min_tokens = 2;  // the tiny prompt's dense products on the library
  options.library_weight_cache_mib = cache_mib;
  gpu::GpuModel m(t.cfg, bind_weights(t.resolver, t.cfg), t.layout, &t.experts, t.stream.stream, options);
  std::vector<std::vector<float>> out;
  for (int round = 0; round < 2; ++round) {
    m.reset();
    std::vector<float> logits(size_t(prompt.size()) * t.cfg.vocab_size);
    m.forward(prompt.data(), uint32_t(prompt.size()), logits.data(), true);
    out.push_back(logits);
  }
  *kept_bytes = m.library_cache_bytes();
  return out;
}

}  // namespace

TEST_CASE("the library path's kept weights give the same logits, bit for bit, filling and hit") {
  if (!gpu::library_gemm_available()) {
    MESSAGE("this build or device has no library path (NVIDIA sm_80+ only): nothing to keep");
    return;
  }
  Tiny t;
  uint64_t off_bytes = 1, on_bytes = 0;
  const std::vector<std::vector<float>> off = two_prompts(t, 0, &off_bytes);
  const std::vector<std::vector<float>> on = two_prompts(t, 64, &on_bytes);
  CHECK(off_bytes == 0);
  CHECK(on_bytes > 0);  // the tiny model's FP8 projections were kept
  CHECK(bitwise_equal(off, on));
  CHECK(bitwise_equal({on[0]}, {on[1]}));  // filling and hit agree
}
