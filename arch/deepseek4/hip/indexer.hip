// The CSA lightning indexer on the GPU (the twin of forward/indexer.cpp): its compressor, the
// scores of the visible entries and the top-k selection, all on the device so the picked entries
// never travel to the host.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "deepseek4/hip/attention_parts.hpp"
#include "deepseek4/hip/attention_reduce.hpp"
#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/ops.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kThreads = 256;
// The host sizes grids without knowing the device's warp size; kernels stride over the work.
constexpr int kMaxScoreBlocks = 4096;

struct ScoreArgs {
  const float *q, *w, *keys;  // [S, nh*ihd] (roped), [S, nh], [entries, ihd]
  float* scores;              // [S, stride]
  int64_t p0, stride, topk;
  int32_t ratio, nh, ihd;
  float head_scale, score_scale;
};

// One warp per (token, entry): I = sum_h relu(q_h . k) * (w_h * nh^-0.5) * ihd^-0.5.
// Tokens that see at most top-k entries take them all and are skipped.
__global__ void __launch_bounds__(kThreads) index_scores_kernel(ScoreArgs a) {
  const int64_t s = blockIdx.y;
  const int64_t visible = (a.p0 + s + 1) / a.ratio;
  if (visible <= a.topk) return;
  const int lane = threadIdx.x % MP_WARP_SIZE;
  const int64_t warps = blockDim.x / MP_WARP_SIZE;
  const float* q = a.q + s * a.nh * a.ihd;
  const float* wts = a.w + s * a.nh;
  for (int64_t e = blockIdx.x * warps + threadIdx.x / MP_WARP_SIZE; e < visible; e += gridDim.x * warps) {
    const float* key = a.keys + e * a.ihd;
    float acc = 0.0f;
    for (int32_t h = 0; h < a.nh; ++h) {
      const float* qh = q + h * a.ihd;
      float d = 0.0f;
      for (int32_t i = lane; i < a.ihd; i += MP_WARP_SIZE) d += qh[i] * key[i];
      d = warp_sum(d);
      if (d > 0.0f) acc += (wts[h] * a.head_scale) * d * a.score_scale;
    }
    if (lane == 0) a.scores[s * a.stride + e] = acc;
  }
}

// Scores as unsigned keys whose order is cpu::top_k's: larger score = larger key, -0 = +0, and
// NaN below every number (key 0; equal keys fall back to the lower index, as equal scores do).
__device__ inline uint32_t order_key(float v) {
  if (isnan(v)) return 0u;
  if (v == 0.0f) v = 0.0f;
  const uint32_t bits = __float_as_uint(v);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Exclusive prefix sums of two counters over the block's threads (Hillis-Steele in shared
// memory); `total_*` receive the block's sums. All threads must call it.
__device__ void block_exclusive_scan2(int32_t& a, int32_t& b, int32_t& total_a, int32_t& total_b, int32_t* sh_a,
                                      int32_t* sh_b) {
  const int t = int(threadIdx.x), n = int(blockDim.x);
  sh_a[t] = a;
  sh_b[t] = b;
  __syncthreads();
  for (int off = 1; off < n; off <<= 1) {
    const int32_t add_a = t >= off ? sh_a[t - off] : 0, add_b = t >= off ? sh_b[t - off] : 0;
    __syncthreads();
    sh_a[t] += add_a;
    sh_b[t] += add_b;
    __syncthreads();
  }
  a = sh_a[t] - a;
  b = sh_b[t] - b;
  total_a = sh_a[n - 1];
  total_b = sh_b[n - 1];
  __syncthreads();  // the arrays are reused by the next call
}

struct SelectArgs {
  const float* scores;   // [S, stride]
  int32_t *sel, *n_sel;  // [S, sel_stride], [S]
  int64_t p0, stride, topk, sel_stride;
  int32_t ratio;
};

// One block per token. The k-th largest key T is found bit by bit (32 block-wide counts, linear
// in the visible entries); the picks are every key above T plus the lowest-indexed entries equal
// to T, written in ascending index order by a running prefix count.
__global__ void __launch_bounds__(kThreads) index_select_kernel(SelectArgs a) {
  __shared__ int32_t partials[kThreads / MP_MIN_WARP_SIZE];
  __shared__ int32_t scan_above[kThreads], scan_equal[kThreads];
  const int64_t s = blockIdx.x;
  const int64_t visible = (a.p0 + s + 1) / a.ratio;
  int32_t* sel = a.sel + s * a.sel_stride;
  if (visible <= a.topk) {
    for (int64_t e = threadIdx.x; e < visible; e += blockDim.x) sel[e] = int32_t(e);
    if (threadIdx.x == 0) a.n_sel[s] = int32_t(visible);
    return;
  }
  const float* v = a.scores + s * a.stride;
  uint32_t kth = 0;  // the largest key with at least topk keys >= it
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t candidate = kth | (1u << bit);
    int32_t count = 0;
    for (int64_t e = threadIdx.x; e < visible; e += blockDim.x) count += order_key(v[e]) >= candidate ? 1 : 0;
    if (block_sum(count, partials) >= a.topk) kth = candidate;
  }
  int32_t above = 0;
  for (int64_t e = threadIdx.x; e < visible; e += blockDim.x) above += order_key(v[e]) > kth ? 1 : 0;
  const int32_t equal_wanted = int32_t(a.topk) - block_sum(above, partials);

  int32_t above_before = 0, equal_before = 0;  // over the chunks already walked
  for (int64_t chunk = 0; chunk < visible; chunk += blockDim.x) {
    const int64_t e = chunk + threadIdx.x;
    const uint32_t key = e < visible ? order_key(v[e]) : 0u;
    const bool is_above = e < visible && key > kth, is_equal = e < visible && key == kth;
    int32_t a_rank = is_above ? 1 : 0, e_rank = is_equal ? 1 : 0, a_total = 0, e_total = 0;
    block_exclusive_scan2(a_rank, e_rank, a_total, e_total, scan_above, scan_equal);
    a_rank += above_before;
    e_rank += equal_before;
    // Picked entries before e: all those above T, and the first equal_wanted of those equal to T.
    const int32_t at = a_rank + (e_rank < equal_wanted ? e_rank : equal_wanted);
    if (is_above || (is_equal && e_rank < equal_wanted)) sel[at] = int32_t(e);
    above_before += a_total;
    equal_before += e_total;
  }
  if (threadIdx.x == 0) a.n_sel[s] = int32_t(a.topk);
}

}  // namespace

void indexer_compress(const GpuLayerParams& lp, const Config& c, GpuLayerState& st, int64_t p0, int64_t S,
                      const float* xn, AttentionScratch& sc, Stream stream) {
  const GpuCompressorParams& p = lp.index_comp;
  matmul(p.wkv, xn, c.hidden_size, sc.idx_kv, p.width, S, stream);
  matmul(p.wgate, xn, c.hidden_size, sc.idx_gate, p.width, S, stream);
  compress_tokens(p, *lp.rope, float(c.rms_norm_eps), p0, S, sc.idx_kv, sc.idx_gate, st.index_comp, stream);
}

void indexer_select(const GpuLayerParams& lp, const Config& c, const GpuLayerState& st, int64_t p0, int64_t S,
                    const float* q_lat, const float* xn, AttentionScratch& sc, Stream stream) {
  if (S <= 0) return;
  const int64_t ratio = lp.index_comp.ratio, topk = c.index_topk;
  const int64_t nh = c.index_n_heads, ihd = c.index_head_dim, rope = c.qk_rope_head_dim;
  // Visible entries grow with the position: the batch's last token sees the most.
  const int64_t most_visible = (p0 + S) / ratio;
  if (most_visible > sc.max_index_entries || most_visible > st.index_comp.n_entries)
    throw std::length_error("indexer: " + std::to_string(most_visible) + " visible entries, but scratch holds " +
                            std::to_string(sc.max_index_entries) + " and the indexer compressor emitted " +
                            std::to_string(st.index_comp.n_entries));
  if (most_visible > topk) {
    matmul(lp.index_wq_b, q_lat, c.q_lora_rank, sc.idx_q, nh * ihd, S, stream);
    matmul(lp.index_weights_proj, xn, c.hidden_size, sc.idx_w, nh, S, stream);
    rope_rotate(sc.idx_q, S, nh, nh * ihd, ihd, ihd - rope, int32_t(rope), lp.rope->cos, lp.rope->sin, p0, 1, false,
                stream);
    ScoreArgs a{sc.idx_q, sc.idx_w, st.index_comp.entries, sc.idx_scores, p0, sc.max_index_entries, topk,
                int32_t(ratio), int32_t(nh), int32_t(ihd), float(1.0 / std::sqrt(double(nh))),
                float(1.0 / std::sqrt(double(ihd)))};
    // Enough blocks for one entry per warp on wave64 targets (half a block's worth on wave32).
    const int64_t per_block = kThreads / 64;
    const dim3 grid(unsigned(std::clamp<int64_t>((most_visible + per_block - 1) / per_block, 1, kMaxScoreBlocks)),
                    unsigned(S));
    index_scores_kernel<<<grid, kThreads, 0, native(stream)>>>(a);
    MP_GPU_CHECK_LAUNCH("index_scores_kernel");
  }
  SelectArgs a{sc.idx_scores, sc.sel, sc.n_sel, p0, sc.max_index_entries, topk, sc.index_topk, int32_t(ratio)};
  index_select_kernel<<<unsigned(S), kThreads, 0, native(stream)>>>(a);
  MP_GPU_CHECK_LAUNCH("index_select_kernel");
}

}  // namespace moepage::ds4::gpu
