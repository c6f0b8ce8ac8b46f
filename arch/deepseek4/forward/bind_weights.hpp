// From a checkpoint to what the forward pass needs: dense tensors as WeightRef views into the
// checkpoint's in-memory copies (resolved in either spelling), the ExpertLayout of the expert catalog's
// slots, and, for tests and small models, every expert loaded into a ResidentExpertSource.
#pragma once
#include <memory>

#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/forward/weights.hpp"
#include "deepseek4/model/catalog.hpp"
#include "deepseek4/model/tensor_names.hpp"

namespace moepage::ds4 {

// Throws ckpt::CheckpointError naming the folder and tensor when a required tensor is missing,
// or std::invalid_argument for a scale encoding the CPU kernels do not read.
Weights bind_weights(const TensorResolver& resolver, const Config& c);

// The slot layout the catalog's pagers fill (parts w1, w1.scale, w3, w3.scale, w2, w2.scale).
ExpertLayout expert_layout(const ExpertCatalog& catalog, const Config& c);

// Every routed expert copied into memory in the catalog's slot layout (reads all expert bytes).
std::unique_ptr<ResidentExpertSource> load_resident_experts(const TensorResolver& resolver,
                                                            const ExpertCatalog& catalog, const Config& c);

}  // namespace moepage::ds4
