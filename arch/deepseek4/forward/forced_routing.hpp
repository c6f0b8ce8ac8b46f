// A routing the forward pass follows instead of its routers' choice. For benchmarks: the
// routing_replay option makes a synthesized model route as a recorded trace says, so paging is
// measured under real routing without the real weights. The weights of the chosen experts still
// come from the router's own scores (normalised as usual), so given the routing the computation
// is the model's own and stays deterministic.
#pragma once
#include <cstdint>

#include "deepseek4/model/config.hpp"

namespace moepage::ds4 {

class ForcedRouting {
 public:
  virtual ~ForcedRouting() = default;
  // The top_k distinct experts, each in [0, n_routed_experts), that `layer` uses for the token at
  // sequence position `position`. Valid until the object is destroyed.
  virtual const int32_t* experts(uint32_t layer, uint64_t position) const = 0;
};

// Copies the k experts `routing` gives (layer, position) into out[k], checking each against the
// config: a bad id would index the expert tables out of bounds. Throws std::out_of_range naming
// the layer, position and expert.
void copy_forced_experts(const ForcedRouting& routing, const Config& c, uint32_t layer, uint64_t position,
                         int32_t* out);

}  // namespace moepage::ds4
