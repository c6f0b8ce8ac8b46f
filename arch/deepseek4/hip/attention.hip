// The attention block on the GPU (the twin of forward/attention.cpp): projections through the
// shared ops, the compressors and the indexer (compressor.hip, indexer.hip), then the attend
// kernels over the sliding ring and the compressed entries with an online softmax (no logits
// buffer, so scratch does not grow with the context): prompts through attend_mma.hpp on the matrix
// cores (a block per token and 16 heads) or attend_tiled.hpp (a block per token and several heads),
// decode through attend_kernel below (a block per (token, head), its keys
// split over several blocks when the batch is small), and the grouped output projection.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "deepseek4/hip/attend_args.hpp"
#include "deepseek4/hip/attend_key_parts.hpp"
#include "deepseek4/hip/attend_mma.hpp"
#include "deepseek4/hip/attend_tiled.hpp"
#include "deepseek4/hip/attention_parts.hpp"
#include "deepseek4/hip/attention_reduce.hpp"
#include "deepseek4/hip/attention_scratch.hpp"
#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/dynamic_shared.hpp"
#include "deepseek4/hip/gemm_policy.hpp"
#include "deepseek4/hip/gemv_many.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/library_gemm.hpp"
#include "deepseek4/hip/ops.hpp"
#include "deepseek4/hip/rope_pair.hpp"
#include "deepseek4/hip/row_dot.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxWarps = kThreads / MP_MIN_WARP_SIZE;
constexpr size_t kSharedBytes = 48 * 1024;  // what every target grants a block without opting in

// A batch of few (token, head) items (decode) spreads each item's keys over up to kMaxSplits
// blocks (grid.y) so more of the device works; the last block of an item merges the partials.
constexpr int kMaxSplits = 4;
constexpr int kKeyRegs = 16;          // a head of up to 16 elements per lane is held in registers
constexpr int64_t kSplitItems = 128;  // split only batches of at most this many items
constexpr int64_t kKeysPerSplit = 8;  // and give every block at least this many keys

// One block per (token, head) and split of its keys; each warp folds a strided share of the
// block's keys into its own running max, denominator and weighted sum (lanes own channels), then
// the warps merge with the sink (one split), or into the block's partial that the item's last
// block merges with the others and the sink.
__global__ void __launch_bounds__(kThreads) attend_kernel(AttendArgs a) {
  kernel_entry();
  extern __shared__ float smem[];
  const int64_t hd = a.hd;
  float* acc_all = smem;                   // [kMaxWarps, hd]
  float* merged = smem + kMaxWarps * hd;   // [hd]
  float* warp_max = merged + hd;           // [kMaxWarps]
  float* warp_den = warp_max + kMaxWarps;  // [kMaxWarps]

  const int64_t item = blockIdx.x, s = item / a.H, h = item % a.H, pos = a.p0 + s;
  const int warps = int(blockDim.x) / MP_WARP_SIZE, warp = int(threadIdx.x) / MP_WARP_SIZE;
  const int lane = int(threadIdx.x) % MP_WARP_SIZE;
  const TokenKeys keys(a, s);
  const float* q = a.q + item * hd;

  float* acc = acc_all + warp * hd;
  for (int64_t d = lane; d < hd; d += MP_WARP_SIZE) acc[d] = 0.0f;
  float m = -INFINITY, den = 0.0f;
  const int64_t n_keys = keys.n_keys, per_split = (n_keys + gridDim.y - 1) / gridDim.y;
  const int64_t k_begin = int64_t(blockIdx.y) * per_split;
  const int64_t k_end = k_begin + per_split < n_keys ? k_begin + per_split : n_keys;
  auto key_of = [&](int64_t k) { return keys.key(a, k); };
  if (hd <= kKeyRegs * MP_WARP_SIZE) {
    // The head fits in registers: q once, and each key's elements all loaded before the dot, so
    // a key costs one memory round trip (a load used at once costs one per element).
    float qv[kKeyRegs], av[kKeyRegs];
#pragma unroll
    for (int u = 0; u < kKeyRegs; ++u) {
      const int64_t d = lane + int64_t(u) * MP_WARP_SIZE;
      qv[u] = d < hd ? q[d] : 0.0f;
      av[u] = 0.0f;
    }
    for (int64_t k = k_begin + warp; k < k_end; k += warps) {
      const float* key = key_of(k);
      float kv[kKeyRegs];
#pragma unroll
      for (int u = 0; u < kKeyRegs; ++u) {
        const int64_t d = lane + int64_t(u) * MP_WARP_SIZE;
        kv[u] = d < hd ? key[d] : 0.0f;
      }
      float dot = 0.0f;
#pragma unroll
      for (int u = 0; u < kKeyRegs; ++u) dot += qv[u] * kv[u];
      const float logit = warp_sum(dot) * a.scale;
      const float m_new = fmaxf(m, logit);
      const float keep = expf(m - m_new);  // 0 for the first key (m = -inf)
      const float p = expf(logit - m_new);
      den = den * keep + p;
#pragma unroll
      for (int u = 0; u < kKeyRegs; ++u) av[u] = av[u] * keep + p * kv[u];
      m = m_new;
    }
#pragma unroll
    for (int u = 0; u < kKeyRegs; ++u) {
      const int64_t d = lane + int64_t(u) * MP_WARP_SIZE;
      if (d < hd) acc[d] = av[u];
    }
  } else {
    for (int64_t k = k_begin + warp; k < k_end; k += warps) {
      const float* key = key_of(k);
      float dot = 0.0f;
      for (int64_t d = lane; d < hd; d += MP_WARP_SIZE) dot += q[d] * key[d];
      const float logit = warp_sum(dot) * a.scale;
      const float m_new = fmaxf(m, logit);
      const float keep = expf(m - m_new);  // 0 for the first key (m = -inf)
      const float p = expf(logit - m_new);
      den = den * keep + p;
      for (int64_t d = lane; d < hd; d += MP_WARP_SIZE) acc[d] = acc[d] * keep + p * key[d];
      m = m_new;
    }
  }
  if (lane == 0) {
    warp_max[warp] = m;
    warp_den[warp] = den;
  }
  __syncthreads();

  // The sink is one more logit in the denominator that carries no value.
  const float sink = a.sink[h];
  if (gridDim.y == 1) {
    float top = sink;
    for (int w = 0; w < warps; ++w) top = fmaxf(top, warp_max[w]);
    float total = expf(sink - top);
    for (int w = 0; w < warps; ++w) total += warp_den[w] * expf(warp_max[w] - top);
    const float inv_total = 1.0f / total;
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
      float o = 0.0f;
      for (int w = 0; w < warps; ++w) o += acc_all[w * hd + d] * expf(warp_max[w] - top);
      merged[d] = o * inv_total;
    }
  } else {
    // This split's partial, without the sink; a split with no keys leaves max -inf and zeros.
    float top = -INFINITY;
    for (int w = 0; w < warps; ++w) top = fmaxf(top, warp_max[w]);
    float* part = a.part + (item * kMaxSplits + blockIdx.y) * (hd + 2);
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
      float o = 0.0f;
      if (top != -INFINITY)
        for (int w = 0; w < warps; ++w) o += acc_all[w * hd + d] * expf(warp_max[w] - top);
      part[d] = o;
    }
    if (threadIdx.x == 0) {
      float total = 0.0f;
      if (top != -INFINITY)
        for (int w = 0; w < warps; ++w) total += warp_den[w] * expf(warp_max[w] - top);
      part[hd] = top;
      part[hd + 1] = total;
    }
    // The fence orders this block's partial before its ticket; the last block sees them all.
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(a.tickets + item, 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const volatile float* parts = a.part + item * kMaxSplits * (hd + 2);  // other blocks' writes
    float top_all = sink;
    for (unsigned sp = 0; sp < gridDim.y; ++sp) top_all = fmaxf(top_all, parts[sp * (hd + 2) + hd]);
    float total = expf(sink - top_all);
    for (unsigned sp = 0; sp < gridDim.y; ++sp)
      total += parts[sp * (hd + 2) + hd + 1] * expf(parts[sp * (hd + 2) + hd] - top_all);
    const float inv_total = 1.0f / total;
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
      float o = 0.0f;
      for (unsigned sp = 0; sp < gridDim.y; ++sp)
        o += parts[sp * (hd + 2) + d] * expf(parts[sp * (hd + 2) + hd] - top_all);
      merged[d] = o * inv_total;
    }
    if (threadIdx.x == 0) a.tickets[item] = 0;  // ready for the next launch
  }
  __syncthreads();

  float* out = a.out + item * hd;
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) out[d] = unrotated_output(a, merged, pos, d);
}

__global__ void __launch_bounds__(kTiledThreads) attend_tiled_kernel(AttendArgs a, int heads_per_block) {
  kernel_entry();
  attend_tiled(a, heads_per_block);
}

#if defined(MOEPAGE_GPU_NVIDIA)
template <int DW, bool Split>
__global__ void __launch_bounds__(kMmaAttendThreads, kMmaAttendBlocksPerSm) attend_mma_kernel(AttendArgs a) {
  kernel_entry();
  attend_mma<DW, Split>(a);
}

template <int DW, bool Split>
void run_attend_mma(const AttendArgs& a, dim3 grid, size_t smem, Stream stream) {
  allow_dynamic_shared(reinterpret_cast<const void*>(&attend_mma_kernel<DW, Split>), smem);
  launch("attend_mma_kernel", attend_mma_kernel<DW, Split>, grid, kMmaAttendThreads, smem, native(stream), a);
}
#endif

// Whether a prompt batch can take the matrix cores: this build, the device, the head's shape, and
// key parts in the scratch for the ring and the entries the batch sees.
bool attend_mma_usable(const AttentionScratch& sc, int64_t H, int64_t hd, int64_t ring_size, int64_t n_entries) {
#if defined(MOEPAGE_GPU_NVIDIA)
  return attend_mma_applies(H, hd) && matrix_cores_available() && sc.key_parts && ring_size <= sc.key_ring_rows &&
         n_entries <= sc.key_entry_rows;
#else
  (void)sc, (void)H, (void)hd, (void)ring_size, (void)n_entries;
  return false;
#endif
}

// The prompt batch on the matrix cores (where attend_mma_usable): every ring slot and entry the
// batch can see split into its bf16 parts, then the kernel.
void launch_attend_mma(AttendArgs a, int64_t S, int64_t n_entries, const AttentionScratch& sc, bool split,
                       Stream stream) {
#if defined(MOEPAGE_GPU_NVIDIA)
  const KeyPartsPass pass{a.ring,           a.entries,   std::min<int64_t>(a.ring_size, a.p0 + S), n_entries, a.hd,
                          sc.key_ring_rows, sc.key_parts};
  const int64_t quads = (pass.n_ring + pass.n_entries) * (a.hd / 4);
  launch("attend_mma key parts", split_key_rows_kernel, unsigned((quads + kThreads - 1) / kThreads), kThreads, 0,
         native(stream), pass);
  a.key_parts = sc.key_parts;
  a.key_entry_row0 = sc.key_ring_rows;
  const dim3 grid(unsigned(S * (a.H / kMmaAttendHeads)));
  const size_t smem = attend_mma_shared_bytes(a.hd);
  auto launch_variant = [&](auto dw) {
    constexpr int DW = decltype(dw)::value;
    if (split) run_attend_mma<DW, true>(a, grid, smem, stream);
    else run_attend_mma<DW, false>(a, grid, smem, stream);
  };
  switch (a.hd / kMmaAttendWarps) {
    case 16: launch_variant(std::integral_constant<int, 16>{}); break;
    case 32: launch_variant(std::integral_constant<int, 32>{}); break;
    case 64: launch_variant(std::integral_constant<int, 64>{}); break;
    default: launch_variant(std::integral_constant<int, 128>{}); break;
  }
#else
  (void)a, (void)S, (void)n_entries, (void)sc, (void)split, (void)stream;
  throw GpuError("gpu attention: the matrix-core prompt kernel is not built for this GPU");
#endif
}

struct NormRopeArgs {
  const float* x;                            // [rows, n]
  float* out;                                // [rows, n] (may be x), or the ring [ring_size, n]
  const float* weight;                       // [n] or null
  const float *cos, *sin;                    // rope tables [positions, half]
  int64_t n, rows_per_token, p0, ring_size;  // ring_size 0: row r goes to out row r
  int32_t half;
  float eps;
};

// Pair p of a row (values x0, x1; r the row's 1 / RMS): normed, weighted, rotated when it lies in
// the rope's columns, and written to o. What both norm_rope kernels write.
__device__ inline void store_norm_rope_pair(const NormRopeArgs& a, float* o, int64_t p, int64_t rope_pair0, float x0,
                                            float x1, double r, float cs, float sn) {
  const float y0 = a.weight ? float(double(x0) * r * double(a.weight[2 * p])) : float(double(x0) * r);
  const float y1 = a.weight ? float(double(x1) * r * double(a.weight[2 * p + 1])) : float(double(x1) * r);
  if (p >= rope_pair0) {
    const float2 rot = rope_pair(y0, y1, cs, sn);
    o[2 * p] = rot.x;
    o[2 * p + 1] = rot.y;
  } else {
    o[2 * p] = y0;
    o[2 * p + 1] = y1;
  }
}

// One block per row: cpu::rms_norm (double sums), then the rope of the row's last 2*half columns
// at its token's position, written to its row of `out` or to its position's ring slot. Thread t
// owns the column pairs t + k*blockDim (k < kNormRopePairs): all its loads, the rope angles
// included, go out before the reduction, and it writes only what it read itself.
constexpr int kNormRopePairs = 4;  // rows of up to 2048 floats

__device__ inline void norm_rope_block_row(const NormRopeArgs& a, int64_t row, double* partials) {
  const int64_t pos = a.p0 + row / a.rows_per_token;
  const float* x = a.x + row * a.n;
  float* o = a.out + (a.ring_size ? pos % a.ring_size : row) * a.n;
  const int64_t pairs = a.n / 2, rope_pair0 = pairs - a.half;
  float v[kNormRopePairs][2], cs[kNormRopePairs], sn[kNormRopePairs];
  double ss = 0;
#pragma unroll
  for (int k = 0; k < kNormRopePairs; ++k) {
    const int64_t p = threadIdx.x + int64_t(k) * blockDim.x;
    const bool in = p < pairs, rot = in && p >= rope_pair0;
    v[k][0] = in ? x[2 * p] : 0.0f;
    v[k][1] = in ? x[2 * p + 1] : 0.0f;
    cs[k] = rot ? a.cos[pos * a.half + (p - rope_pair0)] : 1.0f;
    sn[k] = rot ? a.sin[pos * a.half + (p - rope_pair0)] : 0.0f;
    ss += double(v[k][0]) * double(v[k][0]) + double(v[k][1]) * double(v[k][1]);
  }
  const double r = 1.0 / sqrt(block_sum(ss, partials) / double(a.n) + double(a.eps));
#pragma unroll
  for (int k = 0; k < kNormRopePairs; ++k) {
    const int64_t p = threadIdx.x + int64_t(k) * blockDim.x;
    if (p < pairs) store_norm_rope_pair(a, o, p, rope_pair0, v[k][0], v[k][1], r, cs[k], sn[k]);
  }
}

__global__ void __launch_bounds__(kThreads) norm_rope_kernel(NormRopeArgs a) {
  kernel_entry();
  __shared__ double partials[kMaxWarps];
  norm_rope_block_row(a, blockIdx.x, partials);
}

// Two sets of rows in one launch, a block per row: blocks [0, rows_a) norm a's rows, the rest b's
// (one token's Q heads and its KV row: one launch on the decode's chain instead of two).
__global__ void __launch_bounds__(kThreads) norm_rope_two_kernel(NormRopeArgs a, int64_t rows_a, NormRopeArgs b) {
  kernel_entry();
  __shared__ double partials[kMaxWarps];
  const int64_t row = blockIdx.x;
  if (row < rows_a) norm_rope_block_row(a, row, partials);
  else norm_rope_block_row(b, row - rows_a, partials);
}

// The same for rows of at most kRowPairs * 2 * 32 floats, one warp per row: a block per row of a
// prompt's Q heads (512 floats each, 64 rows per token) spent its time in the block-wide
// reduction's barriers rather than on the row's 2 KiB (H200, 4,096-token prefill: the 12 calls
// took 3.81 ms, and 3.35 ms this way). The warp's lanes own pairs lane + k*warp; the sum of squares is a warp sum.
constexpr int kRowPairs = 16;  // rows of up to 1,024 floats (2,048 on 64-wide wavefronts)
// Below this many rows (a decode step: q's latent row, the KV row, 64 Q heads) a block per row:
// there one warp alone over a row took 7.9 us a launch on average, a block per row 3.8 us, three
// launches a layer (H100, 2026-12-06: decode 2.6-4.3% faster).
constexpr int64_t kRowsKernelMinRows = 256;

__global__ void __launch_bounds__(kThreads) norm_rope_rows_kernel(NormRopeArgs a, int64_t rows) {
  kernel_entry();
  const int lane = int(threadIdx.x) % MP_WARP_SIZE;
  const int64_t warps = blockDim.x / MP_WARP_SIZE;
  const int64_t pairs = a.n / 2, rope_pair0 = pairs - a.half;
  // Grid-stride over rows: the host sizes the grid for 32-wide warps.
  for (int64_t row = int64_t(blockIdx.x) * warps + threadIdx.x / MP_WARP_SIZE; row < rows;
       row += int64_t(gridDim.x) * warps) {
    const int64_t pos = a.p0 + row / a.rows_per_token;
    const float2* x = reinterpret_cast<const float2*>(a.x + row * a.n);
    float* o = a.out + (a.ring_size ? pos % a.ring_size : row) * a.n;
    float2 v[kRowPairs];
    float cs[kRowPairs], sn[kRowPairs];
    double ss = 0;
#pragma unroll
    for (int k = 0; k < kRowPairs; ++k) {
      const int64_t p = lane + int64_t(k) * MP_WARP_SIZE;
      const bool in = p < pairs, rot = in && p >= rope_pair0;
      v[k] = in ? x[p] : make_float2(0.0f, 0.0f);
      cs[k] = rot ? a.cos[pos * a.half + (p - rope_pair0)] : 1.0f;
      sn[k] = rot ? a.sin[pos * a.half + (p - rope_pair0)] : 0.0f;
      ss += double(v[k].x) * double(v[k].x) + double(v[k].y) * double(v[k].y);
    }
    const double r = 1.0 / sqrt(warp_sum(ss) / double(a.n) + double(a.eps));
#pragma unroll
    for (int k = 0; k < kRowPairs; ++k) {
      const int64_t p = lane + int64_t(k) * MP_WARP_SIZE;
      if (p < pairs) store_norm_rope_pair(a, o, p, rope_pair0, v[k].x, v[k].y, r, cs[k], sn[k]);
    }
  }
}

// Refuses rows the norm_rope kernels cannot take (both launchers' check).
void check_norm_rope_rows(const NormRopeArgs& a) {
  if (a.n % 2 || a.n > 2 * kNormRopePairs * kThreads || 2 * int64_t(a.half) > a.n)
    throw std::invalid_argument("gpu attention: rows of " + std::to_string(a.n) + " floats with a rope of " +
                                std::to_string(2 * a.half) + ", expected an even width of at most " +
                                std::to_string(2 * kNormRopePairs * kThreads));
}

void norm_rope(const NormRopeArgs& a, int64_t rows, Stream stream) {
  check_norm_rope_rows(a);
  if (rows >= kRowsKernelMinRows && a.n <= 2 * kRowPairs * MP_MIN_WARP_SIZE &&
      reinterpret_cast<uintptr_t>(a.x) % 8 == 0) {
    constexpr int64_t rows_per_block = kThreads / 32;
    launch("gpu attention norm_rope_rows_kernel", norm_rope_rows_kernel,
           unsigned((rows + rows_per_block - 1) / rows_per_block), kThreads, 0, native(stream), a, rows);
    return;
  }
  launch("gpu attention norm_rope_kernel", norm_rope_kernel, unsigned(rows), kThreads, 0, native(stream), a);
}

void norm_rope_two(const NormRopeArgs& a, int64_t rows_a, const NormRopeArgs& b, int64_t rows_b, Stream stream) {
  check_norm_rope_rows(a);
  check_norm_rope_rows(b);
  launch("gpu attention norm_rope_two_kernel", norm_rope_two_kernel, unsigned(rows_a + rows_b), kThreads, 0,
         native(stream), a, rows_a, b);
}

// project() for one token with the products of xn gathered into few launches, where the
// single-token kernels take them: wq_a and the KV head in one launch on the main stream, Q's heads
// and the KV row normed and roped in one launch after wq_b, and the compressors' products (the
// indexer compressor's too) in one launch on the side stream. A sliding layer then needs no side
// stream, and a compressed layer's side chain is shorter than the query chain beside it. Measured
// why (H100, 4- and 12-layer decode traces, 2026-12-06): the side stream's first kernel starts only
// once the main stream's overlapped launches leave room, and its chain of small products and state
// updates (about 45 us on a CSA layer) kept the attention waiting 10-24 us on every compressed
// layer. False (nothing launched) where the shapes or the policy do not allow it: project() then
// launches the products one by one.
bool project_token(const GpuLayerParams& lp, const Config& c, GpuLayerState& st, int64_t ring_size, int64_t p0,
                   const float* xn, AttentionScratch& sc, bool scored, Stream stream) {
  const int64_t D = c.hidden_size, H = c.num_attention_heads, hd = c.head_dim;
  const float eps = float(c.rms_norm_eps);
  const DeviceRope& r = *lp.rope;
  const bool csa = lp.kind == AttnKind::CSA, compressed = lp.kind != AttnKind::Sliding;
  const GemmPolicy indexer_policy = selection_policy(lp.gemm);
  const GpuCompressorParams& ic = lp.index_comp;
  const MatProduct head[] = {{lp.wq_a, sc.q_lat}, {lp.wkv, sc.kv}};
  const MatProduct comp[] = {{compressed ? lp.comp.wkv : cpu::MatRef{}, sc.comp_kv},
                             {compressed ? lp.comp.wgate : cpu::MatRef{}, sc.comp_gate},
                             {csa ? ic.wkv : cpu::MatRef{}, sc.idx_kv},
                             {csa ? ic.wgate : cpu::MatRef{}, sc.idx_gate}};
  const std::span<const MatProduct> comps(comp, csa ? 4 : 2);
  if (!matmul_many_applies(head, xn, lp.gemm) || !normed_input_applies(lp.wq_b, sc.q_lat, lp.q_norm, lp.gemm) ||
      (scored && !normed_input_applies(lp.index_wq_b, sc.q_lat, lp.q_norm, indexer_policy)) ||
      (compressed && !matmul_many_applies(comps, xn, lp.gemm)) ||
      (csa && !matmul_many_applies(comps, xn, indexer_policy)))
    return false;
  if (compressed) {
    const Stream side = sc.side.fork(stream);
    matmul_many(comps, xn, side, lp.gemm);
    if (csa)
      compress_tokens_two(CompressorBatch{lp.comp, sc.comp_kv, sc.comp_gate, st.comp},
                          CompressorBatch{ic, sc.idx_kv, sc.idx_gate, st.index_comp}, r, eps, p0, 1, side);
    else compress_tokens(lp.comp, r, eps, p0, 1, sc.comp_kv, sc.comp_gate, st.comp, side);
    if (scored) matmul(lp.index_weights_proj, xn, D, sc.idx_w, c.index_n_heads, 1, side, indexer_policy);
  }
  matmul_many(head, xn, stream, lp.gemm);
  matmul_normed_input(lp.wq_b, sc.q_lat, lp.q_norm, eps, sc.q, stream, lp.gemm);
  norm_rope_two(NormRopeArgs{sc.q, sc.q, nullptr, r.cos, r.sin, hd, H, p0, 0, r.half, eps}, H,
                NormRopeArgs{sc.kv, st.ring, lp.kv_norm, r.cos, r.sin, hd, 1, p0, ring_size, r.half, eps}, 1, stream);
  if (scored) matmul_normed_input(lp.index_wq_b, sc.q_lat, lp.q_norm, eps, sc.idx_q, stream, indexer_policy);
  if (compressed) sc.side.join(stream);
  return true;
}

// Q, the shared KV head (written into the ring), the compressors and, for CSA, the indexer's
// compressor and (when it must score) its projections. norm_q false leaves Q's per-head norm and
// rope to the attend kernel (the matrix-core one applies them as it loads Q).
void project(const GpuLayerParams& lp, const Config& c, GpuLayerState& st, int64_t ring_size, int64_t p0, int64_t S,
             const float* xn, AttentionScratch& sc, bool norm_q, Stream stream) {
  const int64_t D = c.hidden_size, H = c.num_attention_heads, hd = c.head_dim, ql = c.q_lora_rank;
  const float eps = float(c.rms_norm_eps);
  const DeviceRope& r = *lp.rope;
  const bool csa = lp.kind == AttnKind::CSA, compressed = lp.kind != AttnKind::Sliding;
  const bool scored = csa && indexer_scores(lp, c, p0, S);
  const int64_t nh = c.index_n_heads, ihd = c.index_head_dim;
  if (S == 1 && norm_q && project_token(lp, c, st, ring_size, p0, xn, sc, scored, stream)) return;

  // The shared KV head (into its ring slot) and the compressors read only xn and their own state:
  // they run on the side stream beside the query chain, joined before the indexer and the
  // attention read them.
  const Stream side = sc.side.fork(stream);
  matmul(lp.wkv, xn, D, sc.kv, hd, S, side, lp.gemm);
  norm_rope(NormRopeArgs{sc.kv, st.ring, lp.kv_norm, r.cos, r.sin, hd, 1, p0, ring_size, r.half, eps}, S, side);
  if (compressed) {
    matmul(lp.comp.wkv, xn, D, sc.comp_kv, lp.comp.width, S, side, lp.gemm);
    matmul(lp.comp.wgate, xn, D, sc.comp_gate, lp.comp.width, S, side, lp.gemm);
    compress_tokens(lp.comp, r, eps, p0, S, sc.comp_kv, sc.comp_gate, st.comp, side);
    if (csa) {
      const GpuCompressorParams& ic = lp.index_comp;
      matmul(ic.wkv, xn, D, sc.idx_kv, ic.width, S, side, selection_policy(lp.gemm));
      matmul(ic.wgate, xn, D, sc.idx_gate, ic.width, S, side, selection_policy(lp.gemm));
      compress_tokens(ic, r, eps, p0, S, sc.idx_kv, sc.idx_gate, st.index_comp, side);
      if (scored) matmul(lp.index_weights_proj, xn, D, sc.idx_w, nh, S, side, selection_policy(lp.gemm));
    }
  }
  matmul(lp.wq_a, xn, D, sc.q_lat, ql, S, stream, lp.gemm);
  // One token: q's latent norm folds into the products that read it (a launch fewer on the
  // decode's serial chain); otherwise it is normed in place first.
  const bool fold_q_norm =
      S == 1 && normed_input_applies(lp.wq_b, sc.q_lat, lp.q_norm, lp.gemm) &&
      (!scored || normed_input_applies(lp.index_wq_b, sc.q_lat, lp.q_norm, selection_policy(lp.gemm)));
  if (fold_q_norm) {
    matmul_normed_input(lp.wq_b, sc.q_lat, lp.q_norm, eps, sc.q, stream, lp.gemm);
  } else {
    norm_rope(NormRopeArgs{sc.q_lat, sc.q_lat, lp.q_norm, r.cos, r.sin, ql, 1, p0, 0, 0, eps}, S, stream);  // no rope
    matmul(lp.wq_b, sc.q_lat, ql, sc.q, H * hd, S, stream, lp.gemm);
  }
  // Per-head norm + rope of q in place.
  if (norm_q) norm_rope(NormRopeArgs{sc.q, sc.q, nullptr, r.cos, r.sin, hd, H, p0, 0, r.half, eps}, S * H, stream);
  if (scored && fold_q_norm)
    matmul_normed_input(lp.index_wq_b, sc.q_lat, lp.q_norm, eps, sc.idx_q, stream, selection_policy(lp.gemm));
  else if (scored) matmul(lp.index_wq_b, sc.q_lat, ql, sc.idx_q, nh * ihd, S, stream, selection_policy(lp.gemm));
  sc.side.join(stream);
}

void check_shapes(const GpuLayerParams& lp, const Config& c, const GpuLayerState& st, int64_t ring_size, int64_t p0,
                  int64_t S, const AttentionScratch& sc) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("gpu attention: " + what); };
  if (S <= 0 || S > sc.max_batch || S > ring_size)
    fail("batch of " + std::to_string(S) + " tokens, expected 1.." + std::to_string(std::min(sc.max_batch, ring_size)));
  if (p0 < 0 || p0 + S > sc.max_context || !lp.rope || p0 + S > lp.rope->positions)
    fail("positions " + std::to_string(p0) + ".." + std::to_string(p0 + S - 1) + " beyond the scratch's " +
         std::to_string(sc.max_context) + " or the rope table's " + std::to_string(lp.rope ? lp.rope->positions : 0));
  if (lp.rope->half * 2 != int32_t(c.qk_rope_head_dim) || c.qk_rope_head_dim > c.head_dim)
    fail("rope table half " + std::to_string(lp.rope->half) + ", expected " + std::to_string(c.qk_rope_head_dim / 2));
  if (!st.ring) fail("layer state has no ring");
  if (lp.kind != AttnKind::Sliding && (!st.comp.entries || lp.comp.width > sc.comp_width))
    fail("compressor state missing or its width " + std::to_string(lp.comp.width) + " exceeds the scratch's " +
         std::to_string(sc.comp_width));
  if (lp.kind == AttnKind::CSA && (!st.index_comp.entries || lp.index_comp.width > sc.index_width))
    fail("indexer state missing or its width " + std::to_string(lp.index_comp.width) + " exceeds the scratch's " +
         std::to_string(sc.index_width));
  // Refuse a gap before anything is written, so a refused batch leaves the state as it was.
  auto check_counter = [&](const GpuCompressorParams& p, const GpuCompressorState& s, const char* which) {
    if (p.ratio == 0 || s.n_entries != p0 / p.ratio)
      throw std::logic_error(std::string("gpu attention: ") + which + " has " + std::to_string(s.n_entries) +
                             " entries, a batch at position " + std::to_string(p0) + " expects " +
                             std::to_string(p.ratio ? p0 / p.ratio : 0) + " (tokens skipped?)");
  };
  if (lp.kind != AttnKind::Sliding) check_counter(lp.comp, st.comp, "compressor");
  if (lp.kind == AttnKind::CSA) check_counter(lp.index_comp, st.index_comp, "indexer compressor");
}

}  // namespace

std::unique_ptr<AttentionScratch> allocate_attention_scratch(const Config& c, const GpuModelParams& p,
                                                             int64_t max_batch, int64_t max_context, DeviceArena& arena,
                                                             DeviceArena& /*pinned: the block needs no host memory*/) {
  if (max_batch <= 0 || max_context <= 0)
    throw std::invalid_argument("attention scratch: max_batch and max_context must be positive, got " +
                                std::to_string(max_batch) + " and " + std::to_string(max_context));
  auto sc = std::make_unique<AttentionScratch>();
  const uint64_t B = uint64_t(max_batch), H = c.num_attention_heads, hd = c.head_dim;
  sc->max_batch = max_batch;
  sc->max_context = max_context;
  for (const GpuLayerParams& lp : p.layers) {
    if (lp.kind == AttnKind::Sliding) continue;
    sc->comp_width = std::max<int64_t>(sc->comp_width, lp.comp.width);
    if (lp.kind != AttnKind::CSA) continue;
    sc->index_width = std::max<int64_t>(sc->index_width, lp.index_comp.width);
    sc->max_index_entries =
        std::max<int64_t>(sc->max_index_entries, max_context / std::max<uint32_t>(1, lp.index_comp.ratio));
  }
  sc->index_topk = std::max<int64_t>(1, c.index_topk);
  const uint64_t nh = c.index_n_heads, ihd = c.index_head_dim, entries = uint64_t(sc->max_index_entries);
  sc->q_lat = arena.take<float>(B * c.q_lora_rank);
  sc->q = arena.take<float>(B * H * hd);
  sc->kv = arena.take<float>(B * hd);
  sc->comp_kv = arena.take<float>(B * uint64_t(sc->comp_width));
  sc->comp_gate = arena.take<float>(B * uint64_t(sc->comp_width));
  sc->idx_kv = arena.take<float>(B * uint64_t(sc->index_width));
  sc->idx_gate = arena.take<float>(B * uint64_t(sc->index_width));
  sc->idx_q = arena.take<float>(B * nh * ihd);
  sc->idx_w = arena.take<float>(B * nh);
  sc->idx_scores = arena.take<float>(B * entries);
  sc->sel = arena.take<int32_t>(B * uint64_t(sc->index_topk));
  sc->n_sel = arena.take<int32_t>(B);
  sc->attn_out = arena.take<float>(B * H * hd);
  sc->oa = arena.take<float>(B * uint64_t(c.o_groups) * c.o_lora_rank);
  const uint64_t split_items = uint64_t(std::min<int64_t>(int64_t(B * H), kSplitItems));
  sc->attend_part = arena.take<float>(split_items * kMaxSplits * (hd + 2));
  sc->attend_tickets = arena.take<uint32_t>(split_items);  // zero-filled by the arena
#if defined(MOEPAGE_GPU_NVIDIA)
  // The matrix-core prompt path's key parts, where batches of several tokens and the head's shape
  // allow that path. The ring holds min(ctx, window + max_batch - 1) slots, as attention() is
  // documented to be given.
  if (max_batch > 1 && attend_mma_applies(int64_t(H), int64_t(hd))) {
    sc->key_ring_rows = std::min<int64_t>(max_context, int64_t(c.sliding_window) + max_batch - 1);
    for (const GpuLayerParams& lp : p.layers)
      if (lp.kind != AttnKind::Sliding)
        sc->key_entry_rows = std::max<int64_t>(sc->key_entry_rows, max_context / std::max<uint32_t>(1, lp.comp.ratio));
    sc->key_parts = arena.take<uint16_t>(uint64_t(sc->key_ring_rows + sc->key_entry_rows) * 2 * hd);
  }
#endif
  return sc;
}

namespace {

// A prompt batch attended on the matrix cores whose wo_a goes to the library: the kernel writes
// its output as wo_a's bf16 parts (over attn_out, which holds the same bytes as floats), so no
// kernel reads the floats back to round them. Null, with `a` left as it was, where that does not
// apply or the library declines the product; it has then taken nothing.
std::unique_ptr<LibraryPartsProduct> output_as_parts(const GpuLayerParams& lp, const Config& c, int64_t S,
                                                     bool on_matrix, AttentionScratch& sc, AttendArgs& a,
                                                     Stream stream) {
  if (!on_matrix || !lp.gemm.attention_parts || !lp.gemm.split || !lp.gemm.library(S)) return nullptr;
  const int64_t G = c.o_groups, ol = c.o_lora_rank;
  auto product = std::make_unique<LibraryPartsProduct>(device_mat(lp.wo_a), weight_code(lp.wo_a, "gpu attention wo_a"),
                                                       ol, G * ol, S, lp.gemm.weight_cache, stream);
  if (!product->ready()) return nullptr;
  a.out_parts = reinterpret_cast<uint16_t*>(sc.attn_out);
  a.parts_tokens = S;
  a.parts_group_heads = int64_t(c.num_attention_heads) / G;
  return product;
}

}  // namespace

void attention(const GpuLayerParams& lp, const Config& c, GpuLayerState& st, int64_t ring_size, int64_t p0, int64_t S,
               const float* xn, AttentionScratch& sc, float* out, Stream stream) {
  check_shapes(lp, c, st, ring_size, p0, S, sc);
  const int64_t H = c.num_attention_heads, hd = c.head_dim;
  // Split the keys when the batch has few items: the most keys a token of it sees, by kind.
  const int64_t last_pos = p0 + S - 1;
  int64_t max_keys = std::min<int64_t>(int64_t(c.sliding_window), last_pos + 1);
  if (lp.kind == AttnKind::HCA) max_keys += (last_pos + 1) / lp.comp.ratio;
  if (lp.kind == AttnKind::CSA) max_keys += std::min<int64_t>(c.index_topk, (last_pos + 1) / lp.comp.ratio);
  const int64_t splits = S * H <= kSplitItems ? std::clamp<int64_t>(max_keys / kKeysPerSplit, 1, kMaxSplits) : 1;
  const int64_t n_entries = lp.kind == AttnKind::Sliding ? 0 : (p0 + S) / std::max<uint32_t>(1, lp.comp.ratio);
  // Prompt batches on the matrix cores, which norm and rope Q as they load it.
  const bool on_matrix = splits == 1 && lp.gemm.matrix(S) && attend_mma_usable(sc, H, hd, ring_size, n_entries);
  project(lp, c, st, ring_size, p0, S, xn, sc, !on_matrix, stream);
  if (lp.kind == AttnKind::CSA) indexer_select(lp, c, st, p0, S, sc, stream);

  AttendArgs a{sc.q,
               st.ring,
               lp.kind == AttnKind::Sliding ? nullptr : st.comp.entries,
               lp.kind == AttnKind::CSA ? sc.sel : nullptr,
               sc.n_sel,
               lp.sink,
               lp.rope->cos,
               lp.rope->sin,
               sc.attn_out,
               ring_size,
               p0,
               H,
               hd,
               int64_t(c.sliding_window),
               sc.index_topk,
               lp.kind == AttnKind::HCA ? int32_t(lp.comp.ratio) : 0,
               lp.rope->half,
               float(1.0 / std::sqrt(double(hd))),
               sc.attend_part,
               sc.attend_tickets};
  const std::unique_ptr<LibraryPartsProduct> wo_a_parts = output_as_parts(lp, c, S, on_matrix, sc, a, stream);
  if (on_matrix) {
    a.q_raw = true;
    a.q_eps = float(c.rms_norm_eps);
    launch_attend_mma(a, S, n_entries, sc, lp.gemm.split, stream);
  } else if (splits == 1 && hd <= kTiledMaxHead) {
    // Unsplit batches (prompts) stage each token's keys once for several heads.
    const int hb = attend_tiled_heads_per_block(H);
    launch("attend_tiled_kernel", attend_tiled_kernel, unsigned(S * (H / hb)), kTiledThreads,
           attend_tiled_shared_bytes(hd), native(stream), a, hb);
  } else {
    const size_t smem = (size_t(kMaxWarps) * hd + hd + 2 * kMaxWarps) * sizeof(float);
    if (smem > kSharedBytes)
      throw std::invalid_argument("gpu attention: head_dim " + std::to_string(hd) + " needs " + std::to_string(smem) +
                                  " bytes of shared memory per block, at most " + std::to_string(kSharedBytes));
    launch("attend_kernel", attend_kernel, dim3(unsigned(S * H), unsigned(splits)), kThreads, smem, native(stream), a);
  }

  // Grouped low-rank output projection: group g of the heads' outputs through rows
  // [g*o_lora, (g+1)*o_lora) of wo_a, then wo_b over all groups.
  const int64_t G = c.o_groups, ol = c.o_lora_rank, group_in = H * hd / G;
  if (wo_a_parts) wo_a_parts->run(a.out_parts, sc.oa);
  else matmul_grouped(lp.wo_a, sc.attn_out, H * hd, group_in, ol, G, sc.oa, G * ol, S, stream, lp.gemm);
  matmul(lp.wo_b, sc.oa, G * ol, out, c.hidden_size, S, stream, lp.gemm);
}

}  // namespace moepage::ds4::gpu
