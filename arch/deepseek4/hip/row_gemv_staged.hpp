// The single-token weight product of row_gemv.hpp with its loads kept in flight (NVIDIA sm_80+),
// for BF16 weights.
//
// The register path loads a step of rows, then multiplies it: while a warp multiplies, none of its
// loads are out. Here every thread copies its own chunks of the next steps into a ring of shared
// memory (cp.async: no register holds them in flight) and multiplies the oldest step meanwhile. A
// thread reads only the slots it filled, so no barrier is needed: each waits for its own groups of
// copies. The sums are the register path's, in the same order (the same bits).
//
// Measured on the H200 at decode (bench/results/2026-12-04-gemv-ring.md): the BF16 products (the
// output head above all) take 7-8.5% less time with a ring of 3 steps, where a weight costs one
// instruction to decode and the loads' latency is what is left. The FP8 and FP4 products ran 2-37%
// slower with it, in blocks of the register path's size or four times larger, and so keep the
// register path; with FP4 decoded in about 2 instructions a weight instead of 5.2 (integer dot
// products, H100, 2026-12-06-decode-experiments.md) the ring was slower still. For .hip files only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "deepseek4/hip/row_gemv.hpp"

#if defined(MOEPAGE_GPU_NVIDIA)
#include "deepseek4/hip/mma_nvidia.hpp"
#endif

namespace moepage::ds4::gpu {

// Steps of rows in the ring (0: the register path); profile key arch.gemv_stages (default 3).
constexpr int kGemvMaxStages = 4;

// 16-byte chunks one thread holds per step: U rows of each of NM matrices, CPT chunks each.
__host__ __device__ constexpr int gemv_step_chunks(int cpt, int nm) { return nm * gemv_rows_in_flight(cpt) * cpt; }

// Shared bytes of the ring for `stages` steps of a block of `threads` (0 steps: none).
inline size_t gemv_ring_bytes(int stages, int cpt, int nm, int threads) {
  return size_t(stages) * size_t(gemv_step_chunks(cpt, nm)) * size_t(threads) * 16u;
}

// Whether this build has the staged path (the AMD build keeps the register path).
#if defined(MOEPAGE_GPU_NVIDIA)
constexpr bool kGemvStagedBuilt = true;
#else
constexpr bool kGemvStagedBuilt = false;
#endif

#if defined(MOEPAGE_GPU_NVIDIA)
// gemv_rows over a ring of S steps at `ring` (gemv_ring_bytes(S, CPT, NM, blockDim.x) bytes):
// slot j of a step holds thread t's chunk j at ring[(step * chunks + j) * threads + t], so a
// warp's copies and reads are 512 contiguous bytes.
template <WeightCode W, int CPT, int NM, int S>
__device__ inline void gemv_rows_staged(const DeviceMat (&mats)[NM], int64_t r0, int64_t r1,
                                        const float (&xv)[CPT][elems_per_chunk<W>()], float* partial, uint4* ring) {
  static_assert(S >= 2 && S <= kGemvMaxStages, "a ring of 2 to kGemvMaxStages steps");
  constexpr int U = gemv_rows_in_flight(CPT), kChunks = gemv_step_chunks(CPT, NM);
  const GemvLane at;
  const int threads = int(blockDim.x);
  uint4* mine = ring + threadIdx.x;
  const int steps = int((r1 - r0 + U - 1) / U);
  // Step i's copies form one group, committed even when empty, so that "all but S - 1 groups"
  // always means "step i has landed".
  auto issue = [&](int i) {
    if (i < steps) {
      uint4* slot = mine + (i % S) * kChunks * threads;
      gemv_step_chunks<W, CPT, NM>(mats, r0 + int64_t(i) * U, r1, at, [&](int m, int u, int k, const uint4* p) {
        mma::copy_async16_after_reads(slot + ((m * U + u) * CPT + k) * threads, p);
      });
    }
    mma::copy_async_commit();
  };
#pragma unroll
  for (int i = 0; i < S - 1; ++i) issue(i);
  for (int i = 0; i < steps; ++i) {
    issue(i + S - 1);  // into the slot step i - 1 was read from
    mma::copy_async_wait_groups<S - 1>();
    const uint4* slot = mine + (i % S) * kChunks * threads;
    uint4 q[NM][U][CPT];
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < CPT; ++k) q[m][u][k] = slot[((m * U + u) * CPT + k) * threads];
    gemv_rows_reduce<W, CPT, NM>(mats, q, r0 + int64_t(i) * U, r0, r1, at, xv, partial);
  }
}
#endif

// The kernels' body: the ring of S steps (S > 0, NVIDIA) or the register path (S == 0).
template <WeightCode W, int CPT, int NM, int S>
__device__ inline void gemv_rows_any(const DeviceMat (&mats)[NM], int64_t r0, int64_t r1,
                                     const float (&xv)[CPT][elems_per_chunk<W>()], float* partial, uint4* ring) {
#if defined(MOEPAGE_GPU_NVIDIA)
  if constexpr (S > 0) {
    gemv_rows_staged<W, CPT, NM, S>(mats, r0, r1, xv, partial, ring);
    return;
  }
#endif
  (void)ring;
  gemv_rows<W, CPT, NM>(mats, r0, r1, xv, partial);
}

// The most shared memory a ring may take: with a block's static arrays it stays inside the 227 KiB
// an H100/H200 block may have.
constexpr int kGemvMaxRingBytes = 128 * 1024;

// The ring's steps a kernel for weights in encoding W and CPT chunks per row of NM matrices is
// built with: BF16 only (above), on a build with the staged path, and no more steps than
// kGemvMaxRingBytes holds for a block of the most threads; where not even two fit, the register
// path. Every launcher asks here, so no other kernel is built with a ring.
__host__ __device__ constexpr int gemv_ring_steps(WeightCode w, int stages, int cpt, int nm) {
  const int fit = kGemvMaxRingBytes / (gemv_step_chunks(cpt, nm) * kGemvMaxSlices * kGemvLanes * 16);
  const int steps = stages < fit ? stages : fit;
  return kGemvStagedBuilt && w == WeightCode::BF16 && steps >= 2 ? steps : 0;
}

// Calls f(integral_constant<int, S>) for the ring's steps asked (0, 2, 3 or 4); the launcher then
// builds its kernel with gemv_ring_steps(W, S, ...).
template <class F>
void with_gemv_stages(int stages, F&& f) {
  switch (stages) {
    case 2: f(std::integral_constant<int, 2>{}); return;
    case 3: f(std::integral_constant<int, 3>{}); return;
    case 4: f(std::integral_constant<int, 4>{}); return;
    default: f(std::integral_constant<int, 0>{}); return;
  }
}

}  // namespace moepage::ds4::gpu
