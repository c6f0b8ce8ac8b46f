// Which experts a prompt chunk will ask for first at one layer, so that the expert source can
// stage them while the layer's attention runs (the copy engine is otherwise idle until the router
// has chosen). A chunk that routes to more of a layer's experts than one band holds fetches them
// in bands of ascending ids (moe.cpp, moe.hip), so its first band is the lowest ids it routes to.
//
// Known exactly on hash layers (tid2eid and the token ids) and under forced routing. On a scored
// layer it is only a guess, made when the chunk is long enough that nearly every expert is routed
// to (S * top_k >= 4 * n_experts: under uniform routing each expert is missed with probability
// below 2%): the band's lowest ids. A wrong guess costs one expert's read, never a wrong result.
//
// A chunk whose experts fit in one band gets nothing here: the step's hints (deepseek4_plugin's
// hint_known_experts) already staged them before the forward pass began.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace moepage::ds4 {

class PromptBand {
 public:
  // Sizes the scratch once (nothing is allocated per call).
  PromptBand(uint32_t n_experts, uint32_t top_k);

  // routed: the chunk's S * top_k expert ids when known (null on a scored layer); ids out of
  // range are skipped here (the router's checks name them). Empty when there is nothing to stage.
  std::span<const int32_t> first_band(const int32_t* routed, int64_t S, uint32_t band);
  // A hash layer: routed ids from tid2eid ([vocab, top_k]) rows of the chunk's tokens.
  std::span<const int32_t> first_band_hashed(const int32_t* tid2eid, uint32_t vocab, const int32_t* tokens, int64_t S,
                                             uint32_t band);

 private:
  std::span<const int32_t> collect(uint32_t band);

  uint32_t n_experts_, top_k_;
  std::vector<uint8_t> used_;   // [n_experts] 1: the chunk routes to it
  std::vector<int32_t> first_;  // the band, ascending
};

}  // namespace moepage::ds4
