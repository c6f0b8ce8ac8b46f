// The routed experts' kernels of one band and how a layer launches them (moe.hip): the
// single-token, tiled and matrix-core variants, picked once per layer. For .hip files only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/hip/decode.hpp"
#include "deepseek4/hip/gemm_policy.hpp"
#include "deepseek4/hip/moe_band.hpp"
#include "deepseek4/hip/moe_mma.hpp"
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

struct RouterFault;

// One layer's routed-expert launches (moe()): where the weights and the band's group record are,
// and the kernel variant, chosen once per layer from all of its experts (plan_expert_launch): the
// token tile from the largest group, the tile and row plans for n_used experts. Every band and
// every group of a band launches that same variant (only grid.y differs), so an expert's output
// has the same bits whether the pager served the layer in one call or in bands, hits first or
// all at once, or the layer was routed on the device.
struct ExpertLaunch {
  const std::byte* const* table_row;
  const ExpertLayout* layout;
  WeightCode up_code, down_code;
  int64_t D, I;
  const int32_t* groups;  // the band's record (moe_band.hpp)
  int32_t nb, np;
  int32_t max_count, n_used, token_tile;
  const float* yn;
  const uint16_t* x16;  // yn rounded for the streamed tiles (null: the layer does not take them)
  float limit;
  float* act;
  float* ex_out;
  ExpertPrecision precision;
  ExpertScaleFault fault;
  Stream stream;
  // Device [2]: the groups of the record this launch computes (Band::range); null: all.
  const int32_t* range = nullptr;
  // Set by plan_expert_launch.
  bool matrix = false, matrix_single = false, up_tiles = false, down_tiles = false, up_vec = false, down_vec = false;
  int gemv_stages = 0;  // the single-token products' ring of loads (GemmPolicy::gemv_stages)
};

// Where each part of an expert sits in its slot, as the kernels take it.
PartArgs part_args(const ExpertPart& p);
// The device address of the fault record's expert-scale word (the host never dereferences it).
unsigned long long* scale_fault_word(RouterFault* f);
// Sets x's variant (the fields after `stream`) for the layer; slots_aligned: every slot of the
// band is 16-byte aligned.
void plan_expert_launch(ExpertLaunch& x, const GemmPolicy& gemm, bool slots_aligned);
// The layer's variant for the experts first .. first + count of the band's record.
void launch_expert_group(const ExpertLaunch& x, int32_t first, int32_t count);

}  // namespace moepage::ds4::gpu
