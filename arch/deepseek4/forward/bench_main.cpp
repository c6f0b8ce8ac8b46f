// ds4-forward-bench: CPU prefill and decode speed of a checkpoint with every expert resident.
// A developer tool until `moepage run` wires the forward pass in.
//   ds4-forward-bench DIR [--prompt N] [--decode N] [--threads T] [--batch B]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "deepseek4/forward/bind_weights.hpp"
#include "deepseek4/forward/model.hpp"
#include "deepseek4/model/config_json.hpp"

int main(int argc, char** argv) {
  using namespace moepage;
  using namespace moepage::ds4;
  using clock = std::chrono::steady_clock;
  if (argc < 2) {
    std::fprintf(stderr, "usage: ds4-forward-bench DIR [--prompt N] [--decode N] [--threads T] [--batch B]\n");
    return 2;
  }
  uint32_t prompt_len = 64, decode = 32, threads = 0, batch = 64;
  for (int i = 2; i + 1 < argc; i += 2) {
    const uint32_t v = uint32_t(std::strtoul(argv[i + 1], nullptr, 10));
    if (!std::strcmp(argv[i], "--prompt")) prompt_len = std::max(1u, v);
    else if (!std::strcmp(argv[i], "--decode")) decode = v;
    else if (!std::strcmp(argv[i], "--threads")) threads = v;
    else if (!std::strcmp(argv[i], "--batch")) batch = std::max(1u, v);
  }
  try {
    const auto t0 = clock::now();
    const Config cfg = load_config_json(argv[1]).config;
    const ckpt::Checkpoint ck = ckpt::Checkpoint::open(argv[1]);
    const TensorResolver resolver(ck);
    resolver.check_required(cfg);
    const auto catalog = ExpertCatalog::build(resolver, cfg);
    auto experts = load_resident_experts(resolver, *catalog, cfg);
    cpu::ThreadPool pool(threads);
    Model m(cfg, bind_weights(resolver, cfg), expert_layout(*catalog, cfg), experts.get(), pool,
            ModelOptions{prompt_len + decode + 1, batch});
    const double load_s = std::chrono::duration<double>(clock::now() - t0).count();

    std::vector<int32_t> prompt(prompt_len);
    for (uint32_t i = 0; i < prompt_len; ++i) prompt[i] = int32_t((i * 7919u + 17u) % cfg.vocab_size);
    std::vector<float> logits(cfg.vocab_size);
    const auto t1 = clock::now();
    m.forward(prompt.data(), prompt_len, logits.data(), false);
    const double prefill_s = std::chrono::duration<double>(clock::now() - t1).count();
    std::vector<int32_t> ids;
    const auto t2 = clock::now();
    for (uint32_t i = 0; i < decode; ++i) {
      int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
      ids.push_back(next);
      m.forward(&next, 1, logits.data(), false);
    }
    const double decode_s = std::chrono::duration<double>(clock::now() - t2).count();
    std::printf(
        "load %.2f s, threads %u\nprefill %u tokens: %.3f s = %.1f tok/s\ndecode %u tokens: %.3f s = %.2f tok/s (%.1f "
        "ms/token)\nids:",
        load_s, pool.size(), prompt_len, prefill_s, prompt_len / prefill_s, decode, decode_s,
        decode ? decode / decode_s : 0.0, decode ? 1e3 * decode_s / decode : 0.0);
    for (int32_t id : ids) std::printf(" %d", id);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ds4-forward-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
