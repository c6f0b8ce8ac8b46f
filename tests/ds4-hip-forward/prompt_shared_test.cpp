// Where a prompt batch's shared expert runs (arch option prompt_shared_expert: auto, beside,
// urgent or first), and a decode step's (decode_shared_expert: beside, urgent or first), changes
// which stream queues its kernels and when their blocks start, never what they compute: the
// combine adds the routed experts to its output in the same order either way, so the prompt's
// logits and every decode step after it are the same bits in all of them.
#include <doctest/doctest.h>

#include <vector>

#include "tiny_gpu_run.hpp"

using namespace moepage::ds4;
using namespace moepage::ds4::test;

TEST_CASE("a prompt's shared expert beside, urgent or first gives the same logits, bit for bit") {
  Tiny t;
  const std::vector<std::vector<float>> beside = run(t, t.experts, true, true, false, false, PromptShared::Beside);
  for (const PromptShared where : {PromptShared::Auto, PromptShared::Urgent, PromptShared::First}) {
    CAPTURE(prompt_shared_name(where));
    // Twice: a missing join would race, and show as a difference between runs as well.
    for (int round = 0; round < 2; ++round) {
      CAPTURE(round);
      CHECK(bitwise_equal(run(t, t.experts, true, true, false, false, where), beside));
    }
  }
}

TEST_CASE("a decode step's shared expert beside, urgent or first gives the same logits, bit for bit") {
  Tiny t;
  for (const bool overlap : {true, false}) {  // with and without the overlapped launches
    CAPTURE(overlap);
    const std::vector<std::vector<float>> beside = run(t, t.experts, true, overlap);
    for (const PromptShared where : {PromptShared::Urgent, PromptShared::First}) {
      CAPTURE(prompt_shared_name(where));
      for (int round = 0; round < 2; ++round) {  // a missing join would race: twice
        CAPTURE(round);
        CHECK(bitwise_equal(run(t, t.experts, true, overlap, false, false, PromptShared::Auto, false, true, nullptr,
                                [&](ModelOptions& o) { o.decode_shared = where; }),
                            beside));
      }
    }
  }
}

// Not the shared expert's stream but the same question: the mHC sites' Sinkhorns on a stream of the
// greatest priority (arch option urgent_sinkhorn) change when their block starts, not its bits.
TEST_CASE("the mHC Sinkhorns on an urgent stream give the same logits, bit for bit") {
  Tiny t;
  for (const bool overlap : {true, false}) {
    CAPTURE(overlap);
    const std::vector<std::vector<float>> plain = run(t, t.experts, true, overlap);
    for (int round = 0; round < 2; ++round) {
      CAPTURE(round);
      CHECK(bitwise_equal(run(t, t.experts, true, overlap, false, false, PromptShared::Auto, false, true, nullptr,
                              [](ModelOptions& o) { o.urgent_sinkhorn = true; }),
                          plain));
    }
  }
}
