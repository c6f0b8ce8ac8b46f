// The CSA/HCA compressors on the GPU (the twin of forward/compressor.cpp). The state is
// sequential (each token fills a slot of the open window, a closing token pools the window), so
// one block walks the batch's tokens in order: a single launch per batch, and decode (S = 1)
// costs one small kernel.
#include <cmath>
#include <stdexcept>
#include <string>

#include "deepseek4/hip/attention_parts.hpp"
#include "deepseek4/hip/attention_reduce.hpp"
#include "deepseek4/hip/check.hpp"

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

// Pools the closed window w into entries[w]: per channel a softmax over the slots' gates (with
// overlap: this window's Cb half and, once there is one, the previous window's Ca half) weighs
// the slots' kv; then the weighted RMS norm and the rope at position w * ratio.
__device__ void emit_entry(const CompressorArgs& a, int64_t w, bool with_prev, float* partials) {
  const int32_t R = a.ratio, dim = a.dim, width = a.width;
  const int32_t cur = a.overlap ? dim : 0;  // where Cb (or the whole kv) sits in a slot
  float* entry = a.entries + w * dim;
  float sum_sq = 0.0f;
  for (int32_t c = threadIdx.x; c < dim; c += blockDim.x) {
    float m = -INFINITY;
    for (int32_t j = 0; j < R; ++j) m = fmaxf(m, a.slot_gate[j * width + cur + c]);
    if (with_prev)
      for (int32_t j = 0; j < R; ++j) m = fmaxf(m, a.prev_gate[j * dim + c]);
    float den = 0.0f, num = 0.0f;
    for (int32_t j = 0; j < R; ++j) {
      const float e = expf(a.slot_gate[j * width + cur + c] - m);
      den += e;
      num += e * a.slot_kv[j * width + cur + c];
    }
    if (with_prev)
      for (int32_t j = 0; j < R; ++j) {
        const float e = expf(a.prev_gate[j * dim + c] - m);
        den += e;
        num += e * a.prev_kv[j * dim + c];
      }
    const float pooled = num / den;
    entry[c] = pooled;
    sum_sq += pooled * pooled;
  }
  const float inv_rms = 1.0f / sqrtf(block_sum(sum_sq, partials) / float(dim) + a.eps);
  for (int32_t c = threadIdx.x; c < dim; c += blockDim.x) entry[c] = entry[c] * inv_rms * a.norm[c];
  __syncthreads();  // the rope pairs channels written by other threads

  const int32_t rope0 = dim - 2 * a.half;
  const int64_t row = w * R * a.half;
  for (int32_t i = threadIdx.x; i < a.half; i += blockDim.x) {
    const float c = a.cos[row + i], s = a.sin[row + i];
    const float x0 = entry[rope0 + 2 * i], x1 = entry[rope0 + 2 * i + 1];
    entry[rope0 + 2 * i] = x0 * c - x1 * s;
    entry[rope0 + 2 * i + 1] = x1 * c + x0 * s;
  }
  if (a.overlap)  // this window's Ca half feeds the next entry
    for (int32_t k = threadIdx.x; k < R * dim; k += blockDim.x) {
      const int32_t j = k / dim, c = k % dim;
      a.prev_kv[k] = a.slot_kv[j * width + c];
      a.prev_gate[k] = a.slot_gate[j * width + c];
    }
}

__global__ void __launch_bounds__(kThreads) compress_tokens_kernel(CompressorArgs a) {
  __shared__ float partials[kThreads / MP_MIN_WARP_SIZE];
  bool has_prev = a.has_prev;
  for (int64_t s = 0; s < a.S; ++s) {
    const int64_t pos = a.p0 + s;
    const int32_t slot = int32_t(pos % a.ratio);
    for (int32_t c = threadIdx.x; c < a.width; c += blockDim.x) {
      a.slot_kv[slot * a.width + c] = a.kv[s * a.width + c];
      a.slot_gate[slot * a.width + c] = a.gate[s * a.width + c] + a.ape[slot * a.width + c];
    }
    if (slot != a.ratio - 1) continue;  // uniform over the block
    __syncthreads();                    // the window's slots were written by other threads
    emit_entry(a, pos / a.ratio, a.overlap && has_prev, partials);
    has_prev = a.overlap;
    __syncthreads();  // slots and prev are read before the next window overwrites them
  }
}

}  // namespace

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

void compress_tokens(const GpuCompressorParams& p, const DeviceRope& rope, float eps, int64_t p0, int64_t S,
                     const float* kv, const float* gate, GpuCompressorState& s, Stream stream) {
  if (S <= 0) return;
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
  CompressorArgs a{kv,        gate,      p.ape,      p.norm, s.kv, s.gate,     s.prev_kv,      s.prev_gate,
                   s.entries, rope.cos,  rope.sin,   p0,     S,    int32_t(R), int32_t(p.dim), int32_t(p.width),
                   rope.half, p.overlap, s.has_prev, eps};
  compress_tokens_kernel<<<1, kThreads, 0, native(stream)>>>(a);
  MP_GPU_CHECK_LAUNCH("compress_tokens_kernel");
  if (entries_after > s.n_entries && p.overlap) s.has_prev = true;
  s.n_entries = entries_after;
}

}  // namespace moepage::ds4::gpu
