// How one synthesized tensor is stored (dtype, shape, optional scale sidecar) and the streaming
// generator that writes its bytes. Values are scaled so activations stay O(1) through depth:
// projections and experts have std 1/sqrt(fan_in), norms ~1, embeddings std 1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/safetensors_writer.hpp"
#include "deepseek4/model/synth.hpp"
#include "deepseek4/model/tensor_names.hpp"

namespace moepage::ds4 {

struct StoredTensor {
  std::string name;  // in the output spelling
  Dtype dtype;
  std::vector<uint64_t> shape;
};

struct SynthTensor {
  TensorSpec spec;      // released name, logical shape, role
  WeightFormat format;  // for Projection / Expert roles
  StoredTensor weight;
  bool has_scale = false;
  StoredTensor scale;
};

SynthTensor plan_tensor(const TensorSpec& spec, const SynthPlan& plan, Spelling spelling);
uint64_t stored_bytes(const SynthTensor& t);

// Streams the tensor's weight (and scale) into `w` in bounded chunks; `seed` selects the values.
void generate_tensor(const SynthTensor& t, const Config& c, uint64_t seed, ckpt::SafetensorsWriter& w);

}  // namespace moepage::ds4
