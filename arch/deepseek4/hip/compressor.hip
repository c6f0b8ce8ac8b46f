// The CSA/HCA compressors on the GPU (the twin of forward/compressor.cpp). The CPU walks the tokens
// in order (each fills a slot of the open window, a closing token pools the window); here every
// window that closes inside the batch is pooled at once (by its own block, or a window of many
// slots by several, pool_wide_windows_kernel), reading its slots from the batch or, for tokens
// before it, from the state, and then one small launch leaves the state as the walk would. A
// prompt's windows no longer wait on each other (one block walking 1,024 tokens took 1.6 ms per
// compressor on the H200).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "deepseek4/hip/attention_parts.hpp"
#include "deepseek4/hip/attention_reduce.hpp"
#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kThreads = 256;

struct CompressorArgs {
  const float *kv, *gate;      // [S, width]
  const float *ape, *norm;     // [ratio, width], [dim]
  float *slot_kv, *slot_gate;  // [ratio, width]
  float *prev_kv, *prev_gate;  // [ratio, dim] (overlap)
  float* entries;              // [max_entries, dim]
  const float *cos, *sin;      // rope tables [positions, half]
  int64_t p0, S;
  int32_t ratio, dim, width, half;
  bool overlap, has_prev;
  float eps;
};

// Where slot j of window w comes from: a token of the batch, or (a token before p0) the state's
// open window. The gate carries the slot's position embedding (ape), added as the state adds it.
__device__ inline float window_kv(const CompressorArgs& a, int64_t w, int32_t j, int32_t c) {
  const int64_t pos = w * a.ratio + j;
  return pos >= a.p0 ? a.kv[(pos - a.p0) * a.width + c] : a.slot_kv[j * a.width + c];
}
__device__ inline float window_gate(const CompressorArgs& a, int64_t w, int32_t j, int32_t c) {
  const int64_t pos = w * a.ratio + j;
  return pos >= a.p0 ? a.gate[(pos - a.p0) * a.width + c] + a.ape[j * a.width + c] : a.slot_gate[j * a.width + c];
}

// The previous window's Ca half (channel c < dim of its slot j): the state's copy when that window
// closed before the batch, otherwise its slots as above.
__device__ inline float prev_kv(const CompressorArgs& a, int64_t w, int32_t j, int32_t c) {
  return w * a.ratio <= a.p0 ? a.prev_kv[j * a.dim + c] : window_kv(a, w - 1, j, c);
}
__device__ inline float prev_gate(const CompressorArgs& a, int64_t w, int32_t j, int32_t c) {
  return w * a.ratio <= a.p0 ? a.prev_gate[j * a.dim + c] : window_gate(a, w - 1, j, c);
}

// The pooled entry of window w (entries[w], written by this block's threads, each its channels
// c = threadIdx.x + k * blockDim.x, whose squares it summed in that order into sum_sq): the
// weighted RMS norm, then the rope at position w * ratio. Every thread of the block calls it.
__device__ inline void norm_rope_entry(const CompressorArgs& a, int64_t w, float sum_sq, float* partials) {
  const int32_t dim = a.dim;
  float* entry = a.entries + w * dim;
  const float inv_rms = 1.0f / sqrtf(block_sum(sum_sq, partials) / float(dim) + a.eps);
  for (int32_t c = threadIdx.x; c < dim; c += blockDim.x) entry[c] = entry[c] * inv_rms * a.norm[c];
  __syncthreads();  // the rope pairs channels written by other threads

  const int32_t rope0 = dim - 2 * a.half;
  const int64_t row = w * a.ratio * a.half;
  for (int32_t i = threadIdx.x; i < a.half; i += blockDim.x) {
    const float c = a.cos[row + i], s = a.sin[row + i];
    const float x0 = entry[rope0 + 2 * i], x1 = entry[rope0 + 2 * i + 1];
    entry[rope0 + 2 * i] = x0 * c - x1 * s;
    entry[rope0 + 2 * i + 1] = x1 * c + x0 * s;
  }
}

// Pools window w, which closes inside the batch, into entries[w]: per channel a softmax over the
// slots' gates (with overlap: this window's Cb half and, once there is one, the previous window's
// Ca half) weighs the slots' kv; then the weighted RMS norm and the rope at position w * ratio.
// One block per window: the windows of a batch are independent once their slots are known.
__global__ void __launch_bounds__(kThreads) emit_windows_kernel(CompressorArgs a, int64_t first_window) {
  kernel_entry();
  __shared__ float partials[kThreads / MP_MIN_WARP_SIZE];
  const int64_t w = first_window + blockIdx.x;
  const int32_t R = a.ratio, dim = a.dim;
  const int32_t cur = a.overlap ? dim : 0;  // where Cb (or the whole kv) sits in a slot
  // A previous half exists once any window has closed: before the batch (the state says) or in it.
  const bool with_prev = a.overlap && (w > a.p0 / R || a.has_prev);
  float* entry = a.entries + w * dim;
  float sum_sq = 0.0f;
  for (int32_t c = threadIdx.x; c < dim; c += blockDim.x) {
    float m = -INFINITY;
    for (int32_t j = 0; j < R; ++j) m = fmaxf(m, window_gate(a, w, j, cur + c));
    if (with_prev)
      for (int32_t j = 0; j < R; ++j) m = fmaxf(m, prev_gate(a, w, j, c));
    float den = 0.0f, num = 0.0f;
    for (int32_t j = 0; j < R; ++j) {
      const float e = expf(window_gate(a, w, j, cur + c) - m);
      den += e;
      num += e * window_kv(a, w, j, cur + c);
    }
    if (with_prev)
      for (int32_t j = 0; j < R; ++j) {
        const float e = expf(prev_gate(a, w, j, c) - m);
        den += e;
        num += e * prev_kv(a, w, j, c);
      }
    const float pooled = num / den;
    entry[c] = pooled;
    sum_sq += pooled * pooled;
  }
  norm_rope_entry(a, w, sum_sq, partials);
}

// Windows of many slots (HCA's 128) pooled by many blocks: emit_windows_kernel gave each window
// one block whose threads walked all the window's slots channel by channel, so a 1,024-token
// prompt's 8 HCA windows kept 8 multiprocessors busy for 188 us (H100, 2026-12-05). Here block
// (window, group) takes kPoolChannels channels, and its threads split the slots into kPoolPhases
// interleaved phases: the maximum is exact in any order, and the phases' sums are added in phase
// order, so every run gives the same bits (the CPU adds the slots in order: float rounding apart).
// finish_windows_kernel then norms and ropes each entry.
constexpr int kPoolChannels = 32;
constexpr int kPoolPhases = kThreads / kPoolChannels;
constexpr int32_t kWideWindow = 16;  // ratios from which windows are pooled this way

__global__ void __launch_bounds__(kThreads) pool_wide_windows_kernel(CompressorArgs a, int64_t first_window) {
  kernel_entry();
  __shared__ float part_m[kPoolPhases][kPoolChannels], part_den[kPoolPhases][kPoolChannels],
      part_num[kPoolPhases][kPoolChannels];
  const int64_t w = first_window + blockIdx.x;
  const int32_t R = a.ratio, dim = a.dim, cur = a.overlap ? dim : 0;
  const bool with_prev = a.overlap && (w > a.p0 / R || a.has_prev);
  const int lane = int(threadIdx.x) % kPoolChannels, phase = int(threadIdx.x) / kPoolChannels;
  const int32_t c = int32_t(blockIdx.y) * kPoolChannels + lane;
  const bool live = c < dim;
  float m = -INFINITY;
  if (live) {
    for (int32_t j = phase; j < R; j += kPoolPhases) m = fmaxf(m, window_gate(a, w, j, cur + c));
    if (with_prev)
      for (int32_t j = phase; j < R; j += kPoolPhases) m = fmaxf(m, prev_gate(a, w, j, c));
  }
  part_m[phase][lane] = m;
  __syncthreads();
#pragma unroll
  for (int p = 0; p < kPoolPhases; ++p) m = fmaxf(m, part_m[p][lane]);
  float den = 0.0f, num = 0.0f;
  if (live) {
    for (int32_t j = phase; j < R; j += kPoolPhases) {
      const float e = expf(window_gate(a, w, j, cur + c) - m);
      den += e;
      num += e * window_kv(a, w, j, cur + c);
    }
    if (with_prev)
      for (int32_t j = phase; j < R; j += kPoolPhases) {
        const float e = expf(prev_gate(a, w, j, c) - m);
        den += e;
        num += e * prev_kv(a, w, j, c);
      }
  }
  part_den[phase][lane] = den;
  part_num[phase][lane] = num;
  __syncthreads();
  if (phase != 0 || !live) return;
  float all_den = 0.0f, all_num = 0.0f;
#pragma unroll
  for (int p = 0; p < kPoolPhases; ++p) all_den += part_den[p][lane], all_num += part_num[p][lane];
  a.entries[w * dim + c] = all_num / all_den;
}

// One block per window pooled by pool_wide_windows_kernel: the norm and rope of its entry.
__global__ void __launch_bounds__(kThreads) finish_windows_kernel(CompressorArgs a, int64_t first_window) {
  kernel_entry();
  __shared__ float partials[kThreads / MP_MIN_WARP_SIZE];
  const int64_t w = first_window + blockIdx.x;
  const float* entry = a.entries + w * a.dim;
  float sum_sq = 0.0f;
  for (int32_t c = threadIdx.x; c < a.dim; c += blockDim.x) sum_sq += entry[c] * entry[c];
  norm_rope_entry(a, w, sum_sq, partials);
}

// The state after the batch, once every window of it is pooled: each slot holds the batch's last
// token of that slot (or keeps its value), and with overlap the previous half is the Ca half of
// the batch's last closed window. Thread (j, c) reads slot j's old value (for that half) before it
// alone overwrites it.
__device__ inline void carry_state(const CompressorArgs& a, int64_t last_closed, int64_t block, int64_t blocks) {
  const int32_t R = a.ratio, width = a.width;
  const int64_t pos_end = a.p0 + a.S - 1;
  for (int64_t i = block * blockDim.x + threadIdx.x; i < int64_t(R) * width; i += blocks * blockDim.x) {
    const int32_t j = int32_t(i / width), c = int32_t(i % width);
    if (a.overlap && last_closed >= 0 && c < a.dim) {
      a.prev_kv[j * a.dim + c] = window_kv(a, last_closed, j, c);
      a.prev_gate[j * a.dim + c] = window_gate(a, last_closed, j, c);
    }
    const int64_t pos = pos_end - ((pos_end % R) - j + R) % R;  // the batch's last token of slot j
    if (pos < a.p0) continue;
    a.slot_kv[j * width + c] = a.kv[(pos - a.p0) * width + c];
    a.slot_gate[j * width + c] = a.gate[(pos - a.p0) * width + c] + a.ape[j * width + c];
  }
}

// One compressor's state update (carry_state) in one launch, or two compressors' (a CSA layer's
// main and indexer compressors) side by side: blocks [0, blocks_a) carry a, the rest b.
struct CarryLaunch {
  CompressorArgs args;
  int64_t last_closed;
  unsigned blocks;
};

__global__ void __launch_bounds__(kThreads) carry_state_kernel(CarryLaunch a, CarryLaunch b) {
  kernel_entry();
  const int64_t block = blockIdx.x;
  if (block < a.blocks) carry_state(a.args, a.last_closed, block, a.blocks);
  else carry_state(b.args, b.last_closed, block - a.blocks, b.blocks);
}

// compress_tokens' checks of the batch against the compressor and its state (nothing launched or
// changed when one fails).
void check_batch(const GpuCompressorParams& p, const DeviceRope& rope, int64_t p0, int64_t S,
                 const GpuCompressorState& s) {
  const int64_t R = p.ratio;
  if (R <= 0 || p.dim == 0 || p.width != (p.overlap ? 2 * p.dim : p.dim))
    throw std::invalid_argument("compressor: ratio " + std::to_string(R) + ", dim " + std::to_string(p.dim) +
                                ", width " + std::to_string(p.width) + " do not describe a compressor");
  if (s.n_entries != p0 / R)
    throw std::logic_error("compressor: the batch starts at position " + std::to_string(p0) + " after " +
                           std::to_string(s.n_entries) + " entries (tokens skipped?)");
  const int64_t entries_after = (p0 + S) / R;
  if (entries_after > s.max_entries)
    throw std::length_error("compressor: more than " + std::to_string(s.max_entries) +
                            " entries; the sequence is longer than the model's max context");
  if (int64_t(rope.half) * 2 > int64_t(p.dim) || (entries_after > 0 && (entries_after - 1) * R >= rope.positions))
    throw std::invalid_argument("compressor: the rope table (" + std::to_string(rope.positions) + " positions, half " +
                                std::to_string(rope.half) + ") does not cover entry " +
                                std::to_string(entries_after - 1) + " of width " + std::to_string(p.dim));
}

// The pooling launches of the windows that close in the batch and the host counters' advance of
// compress_tokens, after check_batch; returns the state update still to launch.
CarryLaunch pool_tokens(const GpuCompressorParams& p, const DeviceRope& rope, float eps, int64_t p0, int64_t S,
                        const float* kv, const float* gate, GpuCompressorState& s, Stream stream) {
  const int64_t R = p.ratio, entries_after = (p0 + S) / R;
  CompressorArgs a{kv,        gate,      p.ape,      p.norm, s.kv, s.gate,     s.prev_kv,      s.prev_gate,
                   s.entries, rope.cos,  rope.sin,   p0,     S,    int32_t(R), int32_t(p.dim), int32_t(p.width),
                   rope.half, p.overlap, s.has_prev, eps};
  const int64_t closing = entries_after - s.n_entries;
  if (closing > 0 && R >= kWideWindow) {
    const dim3 grid(unsigned(closing), unsigned((p.dim + kPoolChannels - 1) / kPoolChannels));
    launch("compressor pool_wide_windows_kernel", pool_wide_windows_kernel, grid, kThreads, 0, native(stream), a,
           s.n_entries);
    launch("compressor finish_windows_kernel", finish_windows_kernel, unsigned(closing), kThreads, 0, native(stream), a,
           s.n_entries);
  } else if (closing > 0) {
    launch("compressor emit_windows_kernel", emit_windows_kernel, unsigned(closing), kThreads, 0, native(stream), a,
           s.n_entries);
  }
  const int64_t cells = R * int64_t(p.width);
  const CarryLaunch carry{a, closing > 0 ? entries_after - 1 : -1,
                          unsigned(std::min<int64_t>((cells + kThreads - 1) / kThreads, 64))};
  if (entries_after > s.n_entries && p.overlap) s.has_prev = true;
  s.n_entries = entries_after;
  return carry;
}

}  // namespace

void compress_tokens(const GpuCompressorParams& p, const DeviceRope& rope, float eps, int64_t p0, int64_t S,
                     const float* kv, const float* gate, GpuCompressorState& s, Stream stream) {
  if (S <= 0) return;
  check_batch(p, rope, p0, S, s);
  const CarryLaunch carry = pool_tokens(p, rope, eps, p0, S, kv, gate, s, stream);
  launch("compressor carry_state_kernel", carry_state_kernel, carry.blocks, kThreads, 0, native(stream), carry,
         CarryLaunch{});
}

void compress_tokens_two(const CompressorBatch& first, const CompressorBatch& second, const DeviceRope& rope, float eps,
                         int64_t p0, int64_t S, Stream stream) {
  if (S <= 0) return;
  check_batch(first.p, rope, p0, S, first.s);  // both before either compressor's state moves
  check_batch(second.p, rope, p0, S, second.s);
  const CarryLaunch a = pool_tokens(first.p, rope, eps, p0, S, first.kv, first.gate, first.s, stream);
  const CarryLaunch b = pool_tokens(second.p, rope, eps, p0, S, second.kv, second.gate, second.s, stream);
  launch("compressor carry_state_kernel (two)", carry_state_kernel, a.blocks + b.blocks, kThreads, 0, native(stream), a,
         b);
}

void init_compressor_state(const GpuCompressorParams& p, int64_t max_entries, DeviceArena& arena,
                           GpuCompressorState& s) {
  s.kv = arena.take<float>(uint64_t(p.ratio) * p.width);
  s.gate = arena.take<float>(uint64_t(p.ratio) * p.width);
  if (p.overlap) {
    s.prev_kv = arena.take<float>(uint64_t(p.ratio) * p.dim);
    s.prev_gate = arena.take<float>(uint64_t(p.ratio) * p.dim);
  } else {
    s.prev_kv = s.prev_gate = nullptr;
  }
  s.entries = arena.take<float>(uint64_t(max_entries) * p.dim);
  s.max_entries = max_entries;
  s.reset();
}

}  // namespace moepage::ds4::gpu
