// What the attend kernels share (.hip files only): their arguments, the keys one token sees, and
// the output's rope un-rotation. attention.hip launches them; attend_tiled.hpp holds the prefill
// kernel.
#pragma once
#include <cstdint>

#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu {

struct AttendArgs {
  const float* q;          // [S, H, hd] (normed, roped)
  const float* ring;       // [ring_size, hd]
  const float* entries;    // [n, hd] compressed entries (CSA, HCA) or null
  const int32_t* sel;      // CSA: [S, sel_stride] picked entries; null otherwise
  const int32_t* n_sel;    // CSA: [S]
  const float* sink;       // [H]
  const float *cos, *sin;  // rope tables [positions, half]
  float* out;              // [S, H, hd]
  int64_t ring_size, p0, H, hd, window, sel_stride;
  int32_t hca_ratio;  // HCA: every closed window is visible; 0 otherwise
  int32_t half;
  float scale;
  float* part;        // split: [items, kMaxSplits, hd + 2] partial sums, max, denominator
  uint32_t* tickets;  // split: [items], zero between launches
  // The matrix-core prompt kernel's keys as bf16 parts (attend_key_parts.hpp): ring slot r at row
  // r, entry e at row key_entry_row0 + e; null where that kernel does not run.
  const uint16_t* key_parts = nullptr;
  int64_t key_entry_row0 = 0;
  // The matrix-core prompt kernel only: q as projected, each head's RMSNorm (eps q_eps, no weight)
  // and rope still to apply as the kernel loads it; otherwise q arrives normed and roped.
  bool q_raw = false;
  float q_eps = 0.0f;
  // The matrix-core prompt kernel only: where non-null, the output goes here instead of `out`, as
  // the two bf16 parts the library's grouped product takes (LibraryPartsProduct, library_gemm.hpp):
  // [groups, parts_tokens, heads_per_group * hd] of the rounding, then as many of what it left;
  // group g holds heads [g * parts_group_heads, (g + 1) * parts_group_heads).
  uint16_t* out_parts = nullptr;
  int64_t parts_tokens = 0, parts_group_heads = 0;
};

// The keys token s of the batch attends over: first its sliding window (oldest first), then its
// compressed entries (every closed HCA window, or the CSA indexer's picks).
struct TokenKeys {
  int64_t first = 0, n_slide = 0, n_keys = 0;
  const int32_t* picked = nullptr;

  __device__ TokenKeys(const AttendArgs& a, int64_t s) {
    const int64_t pos = a.p0 + s;
    first = pos - a.window + 1 > 0 ? pos - a.window + 1 : 0;
    n_slide = pos - first + 1;
    picked = a.sel ? a.sel + s * a.sel_stride : nullptr;
    const int64_t n_comp = a.hca_ratio ? (pos + 1) / a.hca_ratio : (picked ? a.n_sel[s] : 0);
    n_keys = n_slide + n_comp;
  }
  __device__ const float* key(const AttendArgs& a, int64_t k) const {
    return k < n_slide ? a.ring + ((first + k) % a.ring_size) * a.hd
                       : a.entries + (picked ? int64_t(picked[k - n_slide]) : k - n_slide) * a.hd;
  }
  // Key k's row of a.key_parts.
  __device__ int64_t key_part_row(const AttendArgs& a, int64_t k) const {
    return k < n_slide ? (first + k) % a.ring_size
                       : a.key_entry_row0 + (picked ? int64_t(picked[k - n_slide]) : k - n_slide);
  }
};

// Element d of a head's output from its merged values: V = K carried the keys' rotary phase, so
// the rope slice is rotated back by the query's angle.
__device__ inline float unrotated_output(const AttendArgs& a, const float* merged, int64_t pos, int64_t d) {
  const int64_t rope0 = a.hd - 2 * a.half;
  if (d < rope0) return merged[d];
  const int64_t i = (d - rope0) / 2;
  const float c = a.cos[pos * a.half + i], sn = a.sin[pos * a.half + i];
  const float x0 = merged[rope0 + 2 * i], x1 = merged[rope0 + 2 * i + 1];
  return (d - rope0) % 2 == 0 ? x0 * c + x1 * sn : x1 * c - x0 * sn;
}

}  // namespace moepage::ds4::gpu
