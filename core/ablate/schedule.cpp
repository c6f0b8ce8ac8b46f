#include "ablate/schedule.hpp"

#include <numeric>
#include <utility>

namespace moepage::ablate {
namespace {

// splitmix64: a small, fully specified generator, so a seed gives the same order with every
// standard library (std::shuffle's use of the engine is implementation-defined).
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<ScheduledRun> make_schedule(uint32_t repetitions, uint32_t arms, uint32_t prompts, RunOrder order,
                                        uint64_t seed) {
  std::vector<ScheduledRun> runs;
  runs.reserve(size_t(repetitions) * arms * prompts);
  std::vector<uint32_t> arm_order(arms);
  uint64_t state = seed;
  for (uint32_t rep = 0; rep < repetitions; ++rep) {
    for (uint32_t prompt = 0; prompt < prompts; ++prompt) {
      std::iota(arm_order.begin(), arm_order.end(), 0u);
      if (order == RunOrder::Shuffled) {
        for (uint32_t i = arms; i > 1; --i) std::swap(arm_order[i - 1], arm_order[next_random(state) % i]);
      }
      for (uint32_t arm : arm_order) runs.push_back({rep, arm, prompt});
    }
  }
  return runs;
}

}  // namespace moepage::ablate
