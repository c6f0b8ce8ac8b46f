// The tiny DeepSeek-V4 checkpoint on the GPU for the forward-pass tests that compare expert
// sources: the model, its experts resident in device memory, and a run of a short prompt and a
// few greedy decode steps returning every logit.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "deepseek4/forward/bind_weights.hpp"
#include "deepseek4/hip/gpu_model.hpp"
#include "deepseek4/model/config_json.hpp"
#include "gpu_resident_source.hpp"
#include "support/test_paths.hpp"

namespace moepage::ds4::test {

inline constexpr uint32_t kSteps = 12;

struct Tiny {
  std::filesystem::path dir = moepage::test::source_path("models/ds4-debian-tiny");
  Config cfg = load_config_json(dir).config;
  ckpt::Checkpoint checkpoint = ckpt::Checkpoint::open(dir);
  TensorResolver resolver{checkpoint};
  std::unique_ptr<ExpertCatalog> catalog = ExpertCatalog::build(resolver, cfg);
  std::unique_ptr<ResidentExpertSource> host_experts = load_resident_experts(resolver, *catalog, cfg);
  GpuResidentExpertSource experts{*host_experts, cfg.num_hidden_layers, cfg.n_routed_experts};
  const ExpertLayout layout = expert_layout(*catalog, cfg);
  TestStream stream;
};

// Every logit of a 5-token prefill and kSteps greedy decode steps (device_routing,
// overlap_launches, observe_after_attention, predictor_on_device, prompt_shared,
// defer_acquire_finish and direct_hits: the model options; `adjust` sets any other); the model's
// MoE statistics into *stats when given.
inline std::vector<std::vector<float>> run(Tiny& t, gpu::GpuExpertSource& source, bool device_routing = true,
                                           bool overlap_launches = true, bool observe_after_attention = false,
                                           bool predictor_on_device = false,
                                           PromptShared prompt_shared = PromptShared::Auto,
                                           bool defer_acquire_finish = false, bool direct_hits = true,
                                           MoeStats* stats = nullptr,
                                           const std::function<void(ModelOptions&)>& adjust = {}) {
  const std::vector<int32_t> prompt = {1, 17, 300, 4000, 42};
  ModelOptions options{uint32_t(prompt.size() + kSteps), 8};
  options.device_routing = device_routing;
  options.overlap_launches = overlap_launches;
  options.observe_after_attention = observe_after_attention;
  options.predictor_on_device = predictor_on_device;
  options.prompt_shared = prompt_shared;
  options.defer_acquire_finish = defer_acquire_finish;
  options.direct_hits = direct_hits;
  if (adjust) adjust(options);
  gpu::GpuModel m(t.cfg, bind_weights(t.resolver, t.cfg), t.layout, &source, t.stream.stream, options);
  const uint32_t V = t.cfg.vocab_size;
  std::vector<std::vector<float>> out;
  std::vector<float> logits(V);
  m.forward(prompt.data(), uint32_t(prompt.size()), logits.data(), false);
  out.push_back(logits);
  for (uint32_t step = 0; step < kSteps; ++step) {
    int32_t next = 0;
    for (uint32_t v = 1; v < V; ++v)
      if (logits[v] > logits[size_t(next)]) next = int32_t(v);
    m.forward(&next, 1, logits.data(), false);
    out.push_back(logits);
  }
  if (stats) *stats = m.moe_stats();
  return out;
}

inline bool bitwise_equal(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
      return false;
  return true;
}

}  // namespace moepage::ds4::test
