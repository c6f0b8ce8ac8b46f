// ModelOptions::timeline on the GPU (hip/device_marks.hpp): one timeline per prompt batch, inner
// chunks included, read from events on the compute stream; none for a decode step; the parts add
// up to the batch's device time; and the logits are the untimed run's, bit for bit (the marks only
// record events).
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "tiny_gpu_run.hpp"

using namespace moepage::ds4;
using namespace moepage::ds4::test;

TEST_CASE("a timed GPU model records each prompt batch's four marks a layer, and nothing for a decode step") {
  Tiny t;
  const std::vector<int32_t> prompt = {1, 17, 300, 4000, 42};
  ModelOptions options{64, 3};  // the prompt runs as batches of 3 and 2 tokens
  options.timeline = true;
  gpu::GpuModel timed(t.cfg, bind_weights(t.resolver, t.cfg), t.layout, &t.experts, t.stream.stream, options);
  std::vector<float> logits(t.cfg.vocab_size);
  timed.forward(prompt.data(), uint32_t(prompt.size()), logits.data(), false);
  const std::vector<BatchTimeline> got = timed.take_timelines();
  REQUIRE(got.size() == 2);
  CHECK(got[0].tokens == 3);
  CHECK(got[1].tokens == 2);
  for (const BatchTimeline& b : got) {
    for (const auto* v : {&b.attention_site_ms, &b.attention_ms, &b.moe_site_ms, &b.moe_ms}) {
      REQUIRE(v->size() == t.cfg.num_hidden_layers);
      for (double ms : *v) CHECK(ms >= 0.0);
    }
    double parts = b.head_ms;
    for (const auto* v : {&b.attention_site_ms, &b.attention_ms, &b.moe_site_ms, &b.moe_ms})
      parts = std::accumulate(v->begin(), v->end(), parts);
    CHECK(parts == doctest::Approx(b.device_ms).epsilon(1e-6));
    CHECK(b.device_ms > 0.0);
    CHECK(b.queued_ms <= b.wall_ms);
  }
  const int32_t next = 40;
  timed.forward(&next, 1, logits.data(), false);
  CHECK(timed.take_timelines().empty());  // a decode step is not a prompt batch

  ModelOptions plain_options{64, 3};
  gpu::GpuModel plain(t.cfg, bind_weights(t.resolver, t.cfg), t.layout, &t.experts, t.stream.stream, plain_options);
  std::vector<float> want(t.cfg.vocab_size), timed_logits(t.cfg.vocab_size);
  plain.forward(prompt.data(), uint32_t(prompt.size()), want.data(), false);
  CHECK(plain.take_timelines().empty());
  gpu::GpuModel again(t.cfg, bind_weights(t.resolver, t.cfg), t.layout, &t.experts, t.stream.stream, options);
  again.forward(prompt.data(), uint32_t(prompt.size()), timed_logits.data(), false);
  CHECK(bitwise_equal({timed_logits}, {want}));
}
