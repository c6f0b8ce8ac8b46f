// Routing replay, a benchmark mode (arch option routing_replay): a model routes exactly as a
// recorded trace says, and the pager is handed the trace's recorded hints and predictions where
// the live model and predictor would have made them. With it a synthesized model of any geometry
// (e.g. full DeepSeek-V4-Flash, whose real weights are not at hand) pages under real routing.
//
// Mapping: model layer i follows trace layer i mod N (N: the trace's layers), the token at
// sequence position p follows the trace's (p mod T)-th token (T: its tokens). Each (token, layer)
// of the trace must hold exactly one request of top_k experts (a trace of single-token steps, as
// `routing_study` writes; a live trace of prefill batches does not qualify).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "deepseek4/forward/forced_routing.hpp"
#include "deepseek4/model/config.hpp"

namespace moepage::ds4 {

class RoutingReplay final : public ForcedRouting {
 public:
  // Reads `path` (plain text or .xz, trace v1-v4) and checks it against the model: the same
  // number of experts and top_k, one request of top_k experts per trace token and layer. Throws
  // std::runtime_error naming the file and what was expected.
  static std::unique_ptr<RoutingReplay> load(const std::string& path, const Config& c);

  const int32_t* experts(uint32_t layer, uint64_t position) const override;
  // The experts the trace's hint calls named for (layer, position)'s trace layer and token, in
  // rank order (empty when none): hash-routed layers' experts, known before the step.
  std::span<const int32_t> hints(uint32_t layer, uint64_t position) const;
  // The predictor's ranked proposals recorded for (layer, position) (empty when none).
  std::span<const int32_t> predictions(uint32_t layer, uint64_t position) const;

  uint32_t trace_layers() const { return layers_; }
  uint64_t trace_tokens() const { return tokens_; }

 private:
  // Compressed rows: the values of cell (t, l) are values[start[t * layers + l] .. start[+1]).
  struct Ranked {
    std::vector<uint32_t> start;
    std::vector<int32_t> values;
    std::span<const int32_t> cell(uint64_t at) const {
      return {values.data() + start[at], values.data() + start[at + 1]};
    }
  };
  uint64_t cell(uint32_t layer, uint64_t position) const { return (position % tokens_) * layers_ + layer % layers_; }

  uint32_t layers_ = 0, top_k_ = 0;
  uint64_t tokens_ = 0;
  std::vector<int32_t> access_;  // [tokens, layers, top_k]
  Ranked hints_, predictions_;
};

}  // namespace moepage::ds4
