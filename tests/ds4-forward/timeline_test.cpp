// ModelOptions::timeline on the CPU: one timeline per prompt batch, layer by layer, none for a
// single-token step; the parts add up to the batch; the marks' count is checked.
#include <doctest/doctest.h>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "deepseek4/forward/batch_timeline.hpp"
#include "deepseek4/forward/model.hpp"
#include "tiny_model.hpp"

using namespace moepage;
using namespace moepage::ds4;

TEST_CASE("a timed model records each prompt batch's blocks, and nothing for a decode step") {
  const Config c = ds4::test::tiny_config();
  ds4::test::TinyModel tm(c, {Dtype::F32, Dtype::F32}, 5);
  cpu::ThreadPool pool(2);
  ModelOptions options{64, 3};
  options.timeline = true;
  Model m(c, tm.weights(), tm.layout(), &tm.experts(), pool, options);
  const std::vector<int32_t> prompt = {5, 9, 13, 2, 77};
  std::vector<float> logits(c.vocab_size);
  m.forward(prompt.data(), uint32_t(prompt.size()), logits.data(), false);  // batches of 3 and 2 tokens
  const std::vector<BatchTimeline> t = m.take_timelines();
  REQUIRE(t.size() == 2);
  CHECK(t[0].tokens == 3);
  CHECK(t[1].tokens == 2);
  for (const BatchTimeline& b : t) {
    REQUIRE(b.attention_site_ms.size() == c.num_hidden_layers);
    REQUIRE(b.attention_ms.size() == c.num_hidden_layers);
    REQUIRE(b.moe_site_ms.size() == c.num_hidden_layers);
    REQUIRE(b.moe_ms.size() == c.num_hidden_layers);
    double parts = b.head_ms;
    for (const auto* v : {&b.attention_site_ms, &b.attention_ms, &b.moe_site_ms, &b.moe_ms})
      parts = std::accumulate(v->begin(), v->end(), parts);
    CHECK(parts == doctest::Approx(b.device_ms).epsilon(1e-9));
    CHECK(b.moe_ms[0] > 0.0);
    CHECK(b.queued_ms <= b.wall_ms);
  }
  CHECK(m.take_timelines().empty());  // taken
  const int32_t next = 40;
  m.forward(&next, 1, logits.data(), false);
  CHECK(m.take_timelines().empty());  // a decode step is not a prompt batch

  Model plain(c, tm.weights(), tm.layout(), &tm.experts(), pool, ModelOptions{64, 3});
  plain.forward(prompt.data(), uint32_t(prompt.size()), logits.data(), false);
  CHECK(plain.take_timelines().empty());
}

TEST_CASE("a timeline comes from start, four marks a layer and end, and reads as one line") {
  const BatchTimeline t = timeline_from_marks(8, {0.0, 0.25, 1.0, 1.5, 3.5, 3.75, 4.0, 4.5, 7.0, 7.25}, 0.5, 8.0);
  CHECK(t.device_ms == 7.25);
  CHECK(t.attention_site_ms == std::vector<double>{0.25, 0.25});
  CHECK(t.attention_ms == std::vector<double>{0.75, 0.25});
  CHECK(t.moe_site_ms == std::vector<double>{0.5, 0.5});
  CHECK(t.moe_ms == std::vector<double>{2.0, 2.5});
  CHECK(t.head_ms == 0.25);
  CHECK(describe(t) ==
        "prompt batch of 8 tokens: 8.000 ms wall, 7.250 ms on the device (all queued after 0.500 ms); layer 0 "
        "mHC 0.250 + attention 0.750 + mHC 0.500 + MoE 2.000; layer 1 mHC 0.250 + attention 0.250 + mHC 0.500 + "
        "MoE 2.500; head 0.250 ms");
  for (const std::vector<double>& marks :
       {std::vector<double>{0.0}, std::vector<double>{0.0, 1.0, 2.0}, std::vector<double>{0.0, 1.0, 2.0, 3.0}}) {
    CAPTURE(marks.size());
    CHECK_THROWS_WITH_AS(
        timeline_from_marks(8, marks, 0.0, 0.0),
        ("batch timeline: " + std::to_string(marks.size()) + " marks, expected start, four per layer and end").c_str(),
        std::invalid_argument);
  }
}
