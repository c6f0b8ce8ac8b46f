// The NVIDIA matrix-core instructions the tiled products use (sm_80 and later: Ampere, Hopper),
// as inline PTX: 8x8 b16 matrix loads from shared memory (ldmatrix) and the 16x8x16 bf16 product
// with float accumulators (mma.sync). The fragment layouts are PTX's:
//   A 16x16 (row major), four 32-bit registers of two bf16: lane l holds row l/4 (+8 in a1, a3),
//     columns 2(l%4), 2(l%4)+1 (+8 in a2, a3);
//   B 16x8 (column major), two registers: column l/4, rows 2(l%4), 2(l%4)+1 (+8 in b1);
//   C 16x8 floats: c0, c1 at row l/4, columns 2(l%4), 2(l%4)+1; c2, c3 at row l/4 + 8.
// Plus the paired float -> bf16 conversion (cvt) and asynchronous copies to shared memory (cp.async). Included by
// mma_tile.hpp and attend_mma.hpp, only where MOEPAGE_GPU_NVIDIA is defined. For .hip files.
#pragma once
#include <cstdint>

#include "gpu/hip_compat.hpp"

namespace moepage::ds4::gpu::mma {

// Four 8x8 b16 matrices from shared memory: lane l gives the address of row l%8 of matrix l/8 and
// receives, in r[j], its two elements of matrix j (row l/4, columns 2(l%4), +1). Trans: the
// elements (row 2(l%4), column l/4) and (row 2(l%4)+1, column l/4) instead, i.e. the B fragment
// of a matrix stored row by row in k.
template <bool Trans = false>
__device__ inline void load_x4(uint32_t (&r)[4], const void* smem_row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
  if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#else
  (void)smem_row;
  r[0] = r[1] = r[2] = r[3] = 0;
  __trap();  // the launchers never pick this path below sm_80
#endif
}

// 16 bytes from global to shared memory without passing through registers (cp.async, L2 only);
// copy_async_commit closes the thread's group of copies, copy_async_wait_all waits for them all.
__device__ inline void copy_async16(void* smem, const void* global) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(addr), "l"(global));
#else
  (void)smem;
  (void)global;
  __trap();
#endif
}
// copy_async16 that writes 16 zero bytes instead where `live` is false (cp.async's source size
// 0: nothing is read, so `global` need only be some valid address).
__device__ inline void copy_async16_or_zero(void* smem, const void* global, bool live) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr), "l"(global), "r"(live ? 16u : 0u));
#else
  (void)smem;
  (void)global;
  (void)live;
  __trap();
#endif
}
// 4 bytes from global to shared memory (cp.async through L1: the 16-byte form is the only one
// that may bypass it), for rows whose length is a multiple of 4 bytes but not of 16.
__device__ inline void copy_async4(void* smem, const void* global) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(addr), "l"(global));
#else
  (void)smem;
  (void)global;
  __trap();
#endif
}
__device__ inline void copy_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
__device__ inline void copy_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}
// Waits for every group of this thread's copies but the one committed last.
__device__ inline void copy_async_wait_all_but_one() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");
#endif
}

// Waits until at most N of this thread's committed groups of copies are still in flight.
template <int N>
__device__ inline void copy_async_wait_groups() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
// copy_async16 for a ring a thread refills itself: the memory clobber keeps the compiler from
// moving the copy above this thread's earlier reads of the slot it overwrites.
__device__ inline void copy_async16_after_reads(void* smem, const void* global) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(addr), "l"(global) : "memory");
#else
  (void)smem;
  (void)global;
  __trap();
#endif
}

// The 16-bit float of a matrix operand: bf16 everywhere, fp16 for the routed experts' fp16
// operands (mma_operands.hpp).
enum class Half { Bf16, F16 };

// lo and hi rounded to the nearest even in one instruction: lo in bits 0-15, hi in 16-31 (a NaN
// becomes the canonical NaN; fp16: past 65504, infinity).
template <Half H>
__device__ inline uint32_t pack_x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  if constexpr (H == Half::Bf16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  (void)lo;
  (void)hi;
  __trap();
  return 0;
#endif
}
__device__ inline uint32_t pack_bf16x2(float lo, float hi) { return pack_x2<Half::Bf16>(lo, hi); }
__device__ inline uint32_t pack_f16x2(float lo, float hi) { return pack_x2<Half::F16>(lo, hi); }

// a * b for two pairs (fma with -0, so that a product of -0 stays -0): exact when b is a power of
// two and a * b a number of the format, as for FP4 codes times their block scale.
template <Half H>
__device__ inline uint32_t mul_x2(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t d;
  if constexpr (H == Half::Bf16) asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
  else asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
  return d;
#else
  (void)a;
  (void)b;
  __trap();
  return 0;
#endif
}
__device__ inline uint32_t mul_bf16x2(uint32_t a, uint32_t b) { return mul_x2<Half::Bf16>(a, b); }
__device__ inline uint32_t mul_f16x2(uint32_t a, uint32_t b) { return mul_x2<Half::F16>(a, b); }

// c += A (16x16) * B (16x8), both of format H, fp32 accumulation.
template <Half H>
__device__ inline void mma_x(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // Not volatile: a register-only instruction the compiler may schedule among the others.
  if constexpr (H == Half::Bf16)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)c;
  (void)a;
  (void)b0;
  (void)b1;
  __trap();
#endif
}
__device__ inline void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  mma_x<Half::Bf16>(c, a, b0, b1);
}
__device__ inline void mma_f16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  mma_x<Half::F16>(c, a, b0, b1);
}

}  // namespace moepage::ds4::gpu::mma
