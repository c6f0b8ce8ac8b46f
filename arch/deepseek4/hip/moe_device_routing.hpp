// The host's side of a decode step routed on the device, as the MoE block uses it (moe.hip).
#pragma once
#include <cstdint>

#include "deepseek4/hip/expert_source.hpp"
#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu {

struct MoeScratch;

// The distinct experts among one token's k ids and the most pairs one of them serves.
void token_shape(const int32_t* ids, int64_t k, int32_t& n_used, int32_t& max_count);

// Whether `layer`'s slots never move, asked of the source once (then the whole table row is
// uploaded on st): only then may the layer be routed on the device.
bool layer_has_fixed_slots(MoeScratch& sc, GpuExpertSource& source, uint32_t layer, int64_t E, hipStream_t st);

}  // namespace moepage::ds4::gpu
