// The CPU forward backend: the CPU Model on a thread pool, its routed experts from the pager
// through PagerExpertSource (which waits on the pager's ready events on the host). Greedy
// decoding computes the last token's logits and scans them here.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "deepseek4/cpu/thread_pool.hpp"
#include "deepseek4/forward/bind_weights.hpp"
#include "deepseek4/forward/model.hpp"
#include "forward_backend.hpp"
#include "moepage/cpp/plugin_adapter.hpp"
#include "pager_expert_source.hpp"

namespace moepage::ds4 {

namespace {

ModelOptions model_options(const BackendInputs& in) {
  ModelOptions o{in.max_context, in.max_batch, in.forced_routing};
  o.expert_parallel = in.expert_parallel;
  o.timeline = in.timeline;
  return o;
}

class CpuBackend final : public ForwardBackend {
 public:
  explicit CpuBackend(const BackendInputs& in)
      : pool_(in.threads),
        source_(*in.pager),
        model_(in.model->config, in.model->weights, expert_layout(*in.model->catalog, in.model->config), &source_,
               pool_, model_options(in)),
        greedy_logits_(in.model->config.vocab_size, 0.0f) {}

  void forward(const int32_t* tokens, uint32_t n, float* logits, bool all_logits) override {
    model_.forward(tokens, n, logits, all_logits);
  }

  int32_t forward_greedy(const int32_t* tokens, uint32_t n) override {
    model_.forward(tokens, n, greedy_logits_.data(), false);
    return first_max(greedy_logits_);
  }

  std::vector<BatchTimeline> take_timelines() override { return model_.take_timelines(); }

  void reset() override { model_.reset(); }
  uint64_t position() const override { return model_.position(); }

  // The CPU runs the experts synchronously, so their time is measured.
  void routed_stats(mp_arch_stats& out) const override {
    out.routed_timed = 1;
    out.routed_experts = model_.moe_stats().routed_experts;
    out.routed_ns = model_.moe_stats().routed_ns;
    out.collective_calls = model_.moe_stats().collective_calls;
    out.collective_ns = model_.moe_stats().collective_ns;
  }

 private:
  // The first index of the largest logit; a NaN is an error (the host's sampler refuses them too).
  static int32_t first_max(const std::vector<float>& logits) {
    size_t best = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (std::isnan(logits[i]))
        throw mp::Error(MP_ERR_INVALID_ARG, "forward_greedy: logit " + std::to_string(i) + " is NaN");
      if (logits[i] > logits[best]) best = i;
    }
    return int32_t(best);
  }

  // Declared in dependency order: the model goes before its source and its pool.
  cpu::ThreadPool pool_;
  PagerExpertSource source_;
  Model model_;
  std::vector<float> greedy_logits_;  // [vocab]: the last logits forward_greedy scans
};

}  // namespace

std::unique_ptr<ForwardBackend> make_cpu_backend(const BackendInputs& in) { return std::make_unique<CpuBackend>(in); }

}  // namespace moepage::ds4
