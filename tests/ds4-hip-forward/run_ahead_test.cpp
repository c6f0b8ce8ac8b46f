// ModelOptions::run_ahead: a greedy call queues the next step's front (the pick's embedding and
// layer 0's attention half) before the host waits for the pick. A call given exactly that pick
// resumes from the front; any other input (another token, several tokens, a reset) recomputes it.
// Either way the picks and logits equal a model's without it, bit for bit, and the counts say which
// calls took the front, so a front that is never used, or used for the wrong token, fails here.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "tiny_gpu_run.hpp"

using namespace moepage::ds4;
using namespace moepage::ds4::test;

namespace {

struct Drive {
  std::vector<int32_t> picks;
  std::vector<float> logits;  // of the one call that returns logits
  gpu::GpuModel::RunAheadCounts counts;
};

const std::vector<int32_t> kPrompt = {1, 17, 300, 4000, 42};

gpu::GpuModel make_model(Tiny& t, uint32_t max_context, bool run_ahead, bool device_routing) {
  ModelOptions options{max_context, 8};
  options.run_ahead = run_ahead;
  options.device_routing = device_routing;
  return gpu::GpuModel(t.cfg, bind_weights(t.resolver, t.cfg), t.layout, &t.experts, t.stream.stream, options);
}

// A prompt and kSteps greedy steps (each may take the front), then the inputs that must drop it:
// another token than the pick, a reset, two tokens; then one more step that takes it again.
Drive drive(Tiny& t, bool run_ahead, bool device_routing) {
  gpu::GpuModel m = make_model(t, 64, run_ahead, device_routing);
  Drive d;
  int32_t next = m.forward_greedy(kPrompt.data(), uint32_t(kPrompt.size()));
  d.picks.push_back(next);
  for (uint32_t step = 0; step < kSteps; ++step) {
    next = m.forward_greedy(&next, 1);
    d.picks.push_back(next);
  }
  const int32_t other = int32_t((uint32_t(next) + 1) % t.cfg.vocab_size);
  d.logits.resize(t.cfg.vocab_size);
  m.forward(&other, 1, d.logits.data(), false);  // drops the front queued for `next`
  next = m.forward_greedy(&next, 1);             // no front after a logits call: computed whole
  d.picks.push_back(next);
  m.reset();  // drops the front queued for `next`
  next = m.forward_greedy(kPrompt.data(), uint32_t(kPrompt.size()));
  d.picks.push_back(next);
  const int32_t two[2] = {next, 9};
  next = m.forward_greedy(two, 2);  // drops the front: two tokens
  d.picks.push_back(next);
  next = m.forward_greedy(&next, 1);
  d.picks.push_back(next);
  d.counts = m.run_ahead_counts();
  return d;
}

}  // namespace

TEST_CASE("run_ahead: greedy decode resumes from the queued front, other inputs recompute it, bit for bit") {
  Tiny t;
  REQUIRE(t.cfg.layer_types.at(0) == AttnKind::Sliding);  // the front may run ahead
  for (const bool device_routing : {true, false}) {
    CAPTURE(device_routing);
    const Drive plain = drive(t, false, device_routing);
    CHECK(plain.counts.used == 0);
    CHECK(plain.counts.dropped == 0);
    // Twice: a race between the front and the host's next call would show as a difference.
    for (int round = 0; round < 2; ++round) {
      CAPTURE(round);
      const Drive ahead = drive(t, true, device_routing);
      CHECK(ahead.picks == plain.picks);
      CHECK(bitwise_equal({ahead.logits}, {plain.logits}));
      CHECK(ahead.counts.used == kSteps + 1);  // every step given its pick, and the last one
      CHECK(ahead.counts.dropped == 3);        // another token, the reset, two tokens
    }
  }
}

TEST_CASE("run_ahead: no front past max_context, and the call past it still fails") {
  Tiny t;
  gpu::GpuModel m = make_model(t, uint32_t(kPrompt.size() + 1), true, true);
  int32_t next = m.forward_greedy(kPrompt.data(), uint32_t(kPrompt.size()));
  next = m.forward_greedy(&next, 1);  // takes the front of the last position
  CHECK(m.run_ahead_counts().used == 1);
  CHECK(m.position() == kPrompt.size() + 1);
  CHECK_THROWS_AS(m.forward_greedy(&next, 1), std::length_error);
  CHECK(m.run_ahead_counts().used == 1);
  CHECK(m.run_ahead_counts().dropped == 0);  // none was queued past the end
}
