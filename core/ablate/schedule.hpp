// The order the arms run in. Interleaving (ABAB... within every repetition) spreads slow drift of
// the machine (thermal state, page cache, background load) evenly over the arms instead of
// charging it all to whichever arm ran last; `shuffled` also removes the fixed A-before-B bias.
#pragma once
#include <cstdint>
#include <vector>

#include "ablate/spec.hpp"

namespace moepage::ablate {

struct ScheduledRun {
  uint32_t repetition = 0;
  uint32_t arm = 0;     // index into Spec::arms
  uint32_t prompt = 0;  // index into Spec::prompts
};

// Every (repetition, arm, prompt) once. Repetitions run in order; within one, each prompt runs
// every arm back to back: in spec order (interleaved) or in an order drawn from `seed` and the
// repetition (shuffled), so the same spec always gives the same schedule.
std::vector<ScheduledRun> make_schedule(uint32_t repetitions, uint32_t arms, uint32_t prompts, RunOrder order,
                                        uint64_t seed);

}  // namespace moepage::ablate
