// The keys of a prompt batch as the matrix-core attend kernel multiplies them (NVIDIA; .hip files
// only): each float key row as two bf16 parts, hi (rounded to nearest) and lo (the rounded
// remainder), side by side in one row of 2 * hd.
//
// Why a pass of its own: a key is read by every token whose window or picks hold it, and by each
// of those tokens' head groups; the sliding window alone makes that 128 tokens x 4 groups at
// Flash's shape. Split once per batch instead of in every block that stages it, the kernel copies
// the parts straight into shared memory (11% off the kernel on the H200 at 4,096 tokens,
// bench/results/2026-12-04-key-parts.md), with the same bits as before.
//
// One buffer serves every layer: rows [0, ring_rows) mirror the sliding ring slot for slot, rows
// [ring_rows, ring_rows + entry_rows) the compressed entries. The pass rewrites every ring slot
// and entry the batch can see, so whatever wrote them before (a decode step, another layer) never
// leaves a stale part behind.
#pragma once
#include <cstdint>

#include "deepseek4/hip/attend_args.hpp"

#if defined(MOEPAGE_GPU_NVIDIA)
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/mma_nvidia.hpp"
#endif

namespace moepage::ds4::gpu {

#if defined(MOEPAGE_GPU_NVIDIA)

// The rows to split: the first n_ring ring slots and the first n_entries compressed entries.
struct KeyPartsPass {
  const float* ring;
  const float* entries;
  int64_t n_ring, n_entries, hd;
  int64_t entry_row0;  // the parts' row of entry 0 (the buffer's ring rows)
  uint16_t* parts;     // [entry_row0 + entries, 2 * hd]
};

// x0, x1 as two bf16 pairs: hi rounded to nearest, lo the rounded remainder.
__device__ inline void split_bf16_pair(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  hi = mma::pack_bf16x2(x0, x1);
  lo = mma::pack_bf16x2(x0 - __uint_as_float(hi << 16), x1 - __uint_as_float(hi & 0xffff0000u));
}

// One thread per four floats of the ring's rows, then of the entries' (hd a multiple of 4).
__global__ void split_key_rows_kernel(KeyPartsPass p) {
  kernel_entry();
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t per_row = p.hd / 4, ring_quads = p.n_ring * per_row;
  if (id >= ring_quads + p.n_entries * per_row) return;
  const bool in_ring = id < ring_quads;
  const int64_t q = in_ring ? id : id - ring_quads;
  const int64_t row = q / per_row, c = (q % per_row) * 4;
  const float4 v = *reinterpret_cast<const float4*>((in_ring ? p.ring : p.entries) + row * p.hd + c);
  uint32_t h01, l01, h23, l23;
  split_bf16_pair(v.x, v.y, h01, l01);
  split_bf16_pair(v.z, v.w, h23, l23);
  uint16_t* out = p.parts + ((in_ring ? 0 : p.entry_row0) + row) * 2 * p.hd + c;
  *reinterpret_cast<uint2*>(out) = make_uint2(h01, h23);
  *reinterpret_cast<uint2*>(out + p.hd) = make_uint2(l01, l23);
}

#endif  // MOEPAGE_GPU_NVIDIA

}  // namespace moepage::ds4::gpu
