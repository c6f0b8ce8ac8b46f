#include "deepseek4/forward/forced_routing.hpp"

#include <stdexcept>
#include <string>

namespace moepage::ds4 {

void copy_forced_experts(const ForcedRouting& routing, const Config& c, uint32_t layer, uint64_t position,
                         int32_t* out) {
  const int32_t* experts = routing.experts(layer, position);
  const uint32_t k = c.num_experts_per_tok;
  for (uint32_t j = 0; j < k; ++j) {
    const int32_t e = experts[j];
    bool repeated = false;
    for (uint32_t i = 0; i < j; ++i) repeated = repeated || out[i] == e;
    if (e < 0 || uint32_t(e) >= c.n_routed_experts || repeated)
      throw std::out_of_range("forced routing: layer " + std::to_string(layer) + " position " +
                              std::to_string(position) + ": expert " + std::to_string(e) +
                              (repeated ? " chosen twice" : " outside 0.." + std::to_string(c.n_routed_experts - 1)));
    out[j] = e;
  }
}

}  // namespace moepage::ds4
