// The GPU Model against the CPU Model on the committed tiny DeepSeek-V4 (models/ds4-debian-tiny,
// trained, so greedy ids follow real preferences rather than ties): 64 greedy tokens identical,
// and the GPU Model's input checks behave as the CPU Model's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "deepseek4/forward/bind_weights.hpp"
#include "deepseek4/forward/model.hpp"
#include "deepseek4/hip/gpu_model.hpp"
#include "deepseek4/model/config_json.hpp"
#include "golden_fixture.hpp"
#include "gpu_resident_source.hpp"
#include "support/test_paths.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::test;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kTokens = 64;

// The checkpoint, opened once; weights and experts are views or copies of it.
struct TinyCheckpoint {
  fs::path dir = moepage::test::source_path("models/ds4-debian-tiny");
  Config cfg = load_config_json(dir).config;
  ckpt::Checkpoint checkpoint = ckpt::Checkpoint::open(dir);
  TensorResolver resolver{checkpoint};
  std::unique_ptr<ExpertCatalog> catalog = ExpertCatalog::build(resolver, cfg);
};

// The checkpoint with every expert resident on the host and, copied, on the device; a stream.
struct OnDevice : TinyCheckpoint {
  std::unique_ptr<ResidentExpertSource> host_experts = load_resident_experts(resolver, *catalog, cfg);
  GpuResidentExpertSource experts{*host_experts, cfg.num_hidden_layers, cfg.n_routed_experts};
  TestStream stream;
  const ExpertLayout layout = expert_layout(*catalog, cfg);
};

// The prompt as one prefill, then one token per forward, greedy; the first step's logits too.
template <class M>
std::vector<int32_t> greedy(M& m, const std::vector<int32_t>& prompt, uint32_t V, std::vector<float>& first) {
  std::vector<float> logits(V);
  m.forward(prompt.data(), uint32_t(prompt.size()), logits.data(), false);
  first = logits;
  std::vector<int32_t> ids;
  for (uint32_t step = 0; step < kTokens; ++step) {
    ids.push_back(argmax(logits.data(), V));
    if (step + 1 < kTokens) m.forward(&ids.back(), 1, logits.data(), false);
  }
  return ids;
}

}  // namespace

TEST_CASE("GPU and CPU Models give identical greedy ids on models/ds4-debian-tiny for 64 tokens") {
  OnDevice ck;
  const std::vector<int32_t> prompt = {1, 17, 300, 4000, 42};
  const ModelOptions options{uint32_t(prompt.size() + kTokens), 64};
  const uint32_t V = ck.cfg.vocab_size;

  cpu::ThreadPool pool(2);
  Model cpu_model(ck.cfg, bind_weights(ck.resolver, ck.cfg), ck.layout, ck.host_experts.get(), pool, options);
  std::vector<float> cpu_first, gpu_first;
  const std::vector<int32_t> cpu_ids = greedy(cpu_model, prompt, V, cpu_first);

  gpu::GpuModel gpu_model(ck.cfg, bind_weights(ck.resolver, ck.cfg), ck.layout, &ck.experts, ck.stream.stream, options);
  const std::vector<int32_t> gpu_ids = greedy(gpu_model, prompt, V, gpu_first);

  const double diff = max_abs_diff(gpu_first.data(), cpu_first.data(), V);
  MESSAGE("first-step logits max |gpu - cpu| ", diff, " (scale ", max_abs(cpu_first.data(), V), ")");
  CHECK(diff <= 1e-2 * std::max(1.0, max_abs(cpu_first.data(), V)));
  CHECK(gpu_ids == cpu_ids);
  CHECK(gpu_model.moe_stats().routed_experts == cpu_model.moe_stats().routed_experts);
  CHECK(ck.experts.acquired() > 0);

  // The device's greedy pick (forward_greedy) gives the same ids without copying logits back.
  gpu_model.reset();
  std::vector<int32_t> picked{gpu_model.forward_greedy(prompt.data(), uint32_t(prompt.size()))};
  while (picked.size() < kTokens) picked.push_back(gpu_model.forward_greedy(&picked.back(), 1));
  CHECK(picked == cpu_ids);
}

TEST_CASE("the GPU Model refuses bad input as the CPU Model does and allocates nothing per call") {
  OnDevice ck;
  CHECK_THROWS_AS(gpu::GpuModel(ck.cfg, bind_weights(ck.resolver, ck.cfg), ck.layout, nullptr, ck.stream.stream),
                  std::invalid_argument);
  CHECK_THROWS_AS(gpu::GpuModel(ck.cfg, bind_weights(ck.resolver, ck.cfg), ck.layout, &ck.experts, ck.stream.stream,
                                ModelOptions{8, 0}),
                  std::invalid_argument);
  ExpertLayout wrong = ck.layout;
  wrong.intermediate += 1;
  CHECK_THROWS_AS(gpu::GpuModel(ck.cfg, bind_weights(ck.resolver, ck.cfg), wrong, &ck.experts, ck.stream.stream),
                  std::invalid_argument);

  gpu::GpuModel m(ck.cfg, bind_weights(ck.resolver, ck.cfg), ck.layout, &ck.experts, ck.stream.stream,
                  ModelOptions{8, 4});
  const uint64_t reserved = m.device_bytes();
  std::vector<float> logits(size_t(8) * ck.cfg.vocab_size);
  const int32_t outside = int32_t(ck.cfg.vocab_size);
  CHECK_THROWS_AS(m.forward(&outside, 1, logits.data(), false), std::out_of_range);
  const std::vector<int32_t> nine(9, 5);
  CHECK_THROWS_AS(m.forward(nine.data(), 9, logits.data(), true), std::length_error);
  CHECK(m.position() == 0);
  const std::vector<int32_t> eight = {1, 2, 3, 4, 5, 6, 7, 8};
  m.forward(eight.data(), 8, logits.data(), true);  // two internal batches of 4
  CHECK(m.position() == 8);
  CHECK(std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); }));
  CHECK(m.device_bytes() == reserved);
}

TEST_CASE("the GPU router refuses a non-finite score as the CPU router does, naming layer, position and expert") {
  OnDevice ck;
  Weights w = bind_weights(ck.resolver, ck.cfg);
  uint32_t layer = 0;
  while (layer < ck.cfg.num_hidden_layers && !w.layers[layer].gate_bias.present()) ++layer;
  REQUIRE(layer < ck.cfg.num_hidden_layers);
  REQUIRE(w.layers[layer].gate_bias.dtype == Dtype::F32);
  // A copy of the bias with a NaN for expert 2 (the load-time check is bypassed here on purpose).
  std::vector<float> bias(ck.cfg.n_routed_experts);
  std::memcpy(bias.data(), w.layers[layer].gate_bias.data, bias.size() * sizeof(float));
  bias[2] = std::nanf("");
  // And an infinite bias on the last expert: every token faults twice, in two threads of its block,
  // and every block races to record. The record must still name the lowest token and expert.
  bias.back() = std::numeric_limits<float>::infinity();
  w.layers[layer].gate_bias.data = reinterpret_cast<const std::byte*>(bias.data());
  gpu::GpuModel m(ck.cfg, w, ck.layout, &ck.experts, ck.stream.stream, ModelOptions{16, 4});
  const std::string expected =
      "router of layer " + std::to_string(layer) + ": token at position 0 (id 3) has a non-finite biased score ";
  auto error_of = [](auto&& call) {
    try {
      call();
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<float> logits(ck.cfg.vocab_size);
  const std::vector<int32_t> ids{3, 4};
  // Logits copied back, the device's greedy pick, and a call with no output (which must still wait).
  const std::string with_logits = error_of([&] { m.forward(ids.data(), 2, logits.data(), false); });
  CAPTURE(with_logits);
  CHECK(with_logits.find(expected) != std::string::npos);
  CHECK(with_logits.find("for expert 2") != std::string::npos);
  m.reset();
  const std::string greedy_pick = error_of([&] { (void)m.forward_greedy(ids.data(), 2); });
  CAPTURE(greedy_pick);
  CHECK(greedy_pick.find(expected) != std::string::npos);
  m.reset();
  const std::string no_output = error_of([&] { m.forward(ids.data(), 2, nullptr, false); });
  CAPTURE(no_output);
  CHECK(no_output.find(expected) != std::string::npos);
}
