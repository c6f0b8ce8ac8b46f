// What the routed-expert kernels of one band read (moe_experts.hip, moe_mma.hip): where each part of an
// expert sits in its slot, and the band's group record. For .hip files only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "deepseek4/hip/decode.hpp"

namespace moepage::ds4::gpu {

// Where one part of an expert sits inside its slot.
struct PartArgs {
  uint64_t offset = 0, scale_offset = 0;
  bool has_scale = false;
};

__device__ inline DeviceMat part_mat(const std::byte* slot, const PartArgs& p, int64_t rows, int64_t cols) {
  const auto* base = reinterpret_cast<const uint8_t*>(slot);
  return DeviceMat{base + p.offset, p.has_scale ? base + p.scale_offset : nullptr, rows, cols, 0};
}

// The band's group record: experts [nb], starts [nb+1] (into the pair lists), tokens [np], pairs [np].
// A launch covers the experts first .. first + count of the record (a group of the band).
// range (null: every group): under a slot lookup (ModelOptions::slot_table) the layer's experts
// launch twice, the groups the lookup found first and the others after the host filled them; a
// device pair [range[0], range[1]) says which groups of the record this launch computes, and the
// blocks of any other leave at once.
struct Band {
  const int32_t* groups;
  int32_t nb, np;
  int32_t first = 0;
  const int32_t* range = nullptr;
  __device__ bool skips(int32_t b) const { return range && (first + b < range[0] || first + b >= range[1]); }
  __device__ const int32_t* experts() const { return groups + first; }
  __device__ const int32_t* starts() const { return groups + nb + first; }
  __device__ const int32_t* tokens() const { return groups + 2 * nb + 1; }
  __device__ const int32_t* pairs() const { return groups + 2 * nb + 1 + np; }
};

}  // namespace moepage::ds4::gpu
