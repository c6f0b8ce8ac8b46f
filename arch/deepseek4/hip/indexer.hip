// The CSA lightning indexer on the GPU (the twin of forward/indexer.cpp): the scores of the
// visible entries (the kernels in index_scores.hpp) and the top-k selection, all on the device so
// the picked entries never travel to the host (its compressor and projections run with the
// attention block's, attention.hip).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "deepseek4/hip/attention_parts.hpp"
#include "deepseek4/hip/attention_reduce.hpp"
#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/index_scores.hpp"
#include "deepseek4/hip/launch.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kSelectThreads = 256;
// The host sizes grids without knowing the device's warp size; kernels stride over the work.
constexpr int kMaxScoreBlocks = 4096;
constexpr int64_t kEntriesPerBlock = 16;
constexpr size_t kSharedBytes = 48 * 1024;  // what every target grants a block without opting in

// Scores as unsigned keys whose order is cpu::top_k's: larger score = larger key, -0 = +0, and
// NaN below every number (key 0; equal keys fall back to the lower index, as equal scores do).
__device__ inline uint32_t order_key(float v) {
  if (isnan(v)) return 0u;
  if (v == 0.0f) v = 0.0f;
  const uint32_t bits = __float_as_uint(v);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Exclusive prefix sums of two counters over the block's threads (Hillis-Steele in shared
// memory). All threads must call it.
__device__ void block_exclusive_scan2(int32_t& a, int32_t& b, int32_t* sh_a, int32_t* sh_b) {
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
}

constexpr int kDigitBits = 8, kBins = 1 << kDigitBits;

// Warp 0 only: the digit d (scanning from the largest) at which the keys with digits > d number
// fewer than `want` and those >= d at least `want`; *want_left becomes want minus the keys above d.
__device__ void find_digit(const int32_t* hist, int32_t want, uint32_t* digit, int32_t* want_left) {
  const int lane = int(threadIdx.x % MP_WARP_SIZE);
  constexpr int per_lane = kBins / MP_WARP_SIZE;  // lane l holds the bins kBins-1-l*per_lane downwards
  int32_t own = 0;
  for (int i = 0; i < per_lane; ++i) own += hist[kBins - 1 - lane * per_lane - i];
  int32_t incl = own;  // inclusive scan over the lanes, from the largest bins
  for (int off = 1; off < MP_WARP_SIZE; off <<= 1) {
    const int32_t y = MP_SHFL(incl, lane >= off ? lane - off : lane);
    if (lane >= off) incl += y;
  }
  int32_t before = incl - own;
  if (before < want && want <= incl) {
    for (int i = 0; i < per_lane; ++i) {
      const int d = kBins - 1 - lane * per_lane - i;
      if (before + hist[d] >= want) {
        *digit = uint32_t(d);
        *want_left = want - before;
        return;
      }
      before += hist[d];
    }
  }
}

struct SelectArgs {
  const float* scores;   // [S, stride]
  int32_t *sel, *n_sel;  // [S, sel_stride], [S]
  int64_t p0, stride, topk, sel_stride;
  int32_t ratio;
};

// One block per token. The k-th largest key T is found a byte at a time (4 histogram passes over
// the visible entries); the picks are every key above T plus the lowest-indexed entries equal to
// T. Each thread owns a contiguous range of entries, so one block-wide scan of its counts places
// its picks in ascending index order.
__global__ void __launch_bounds__(kSelectThreads) index_select_kernel(SelectArgs a) {
  kernel_entry();
  __shared__ int32_t hist[kBins];
  __shared__ int32_t scan_above[kSelectThreads], scan_equal[kSelectThreads];
  __shared__ uint32_t digit;
  __shared__ int32_t want;
  const int64_t s = blockIdx.x;
  const int64_t visible = (a.p0 + s + 1) / a.ratio;
  int32_t* sel = a.sel + s * a.sel_stride;
  if (visible <= a.topk) {
    for (int64_t e = threadIdx.x; e < visible; e += blockDim.x) sel[e] = int32_t(e);
    if (threadIdx.x == 0) a.n_sel[s] = int32_t(visible);
    return;
  }
  const float* v = a.scores + s * a.stride;
  uint32_t prefix = 0, mask = 0;
  if (threadIdx.x == 0) want = int32_t(a.topk);
  for (int shift = 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
    for (int b = threadIdx.x; b < kBins; b += blockDim.x) hist[b] = 0;
    __syncthreads();
    for (int64_t e = threadIdx.x; e < visible; e += blockDim.x) {
      const uint32_t key = order_key(v[e]);
      if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & (kBins - 1)], 1);
    }
    __syncthreads();
    if (threadIdx.x < MP_WARP_SIZE) find_digit(hist, want, &digit, &want);
    __syncthreads();
    prefix |= digit << shift;
    mask |= uint32_t(kBins - 1) << shift;
  }
  const uint32_t kth = prefix;        // the topk-th largest key
  const int32_t equal_wanted = want;  // how many entries equal to it are picked (lowest indices)

  const int64_t per = (visible + blockDim.x - 1) / blockDim.x;
  const int64_t lo = int64_t(threadIdx.x) * per < visible ? int64_t(threadIdx.x) * per : visible;
  const int64_t hi = lo + per < visible ? lo + per : visible;
  int32_t above = 0, equal = 0;
  for (int64_t e = lo; e < hi; ++e) {
    const uint32_t key = order_key(v[e]);
    above += key > kth ? 1 : 0;
    equal += key == kth ? 1 : 0;
  }
  block_exclusive_scan2(above, equal, scan_above, scan_equal);
  for (int64_t e = lo; e < hi; ++e) {
    const uint32_t key = order_key(v[e]);
    // Picked entries before e: all those above T, and the first equal_wanted of those equal to T.
    if (key > kth || (key == kth && equal < equal_wanted))
      sel[above + (equal < equal_wanted ? equal : equal_wanted)] = int32_t(e);
    above += key > kth ? 1 : 0;
    equal += key == kth ? 1 : 0;
  }
  if (threadIdx.x == 0) a.n_sel[s] = int32_t(a.topk);
}

// Whether the tiled kernel serves this batch: a prompt chunk (a decode step's few tokens would
// give it a few blocks; the general kernel spreads each token's entries wider), 64 heads, a head
// dim of whole key slices, its shared memory within what every target grants, and keys aligned
// for 16-byte loads.
constexpr int64_t kTiledMinTokens = 32;
bool tiled_scores_apply(const ScoreArgs& a, int64_t S) {
  return S >= kTiledMinTokens && a.nh == kTiledHeads && a.ihd % kTiledDims == 0 &&
         tiled_scores_shared_bytes(a.ihd) <= int64_t(kSharedBytes) && reinterpret_cast<uintptr_t>(a.keys) % 16 == 0;
}

// The scores of S tokens whose last sees most_visible entries, by the tiled kernel where it
// applies, else the general one (any head count and dim).
void launch_index_scores(const ScoreArgs& a, int64_t S, int64_t most_visible, Stream stream) {
  if (tiled_scores_apply(a, S)) {
    const int64_t per_block = int64_t(kTiledTilesPerBlock) * kTiledEntries;
    const dim3 grid(unsigned((most_visible + per_block - 1) / per_block), unsigned(S));
    launch("index_scores_tiled_kernel", index_scores_tiled_kernel, grid, kTiledThreads,
           size_t(tiled_scores_shared_bytes(a.ihd)), native(stream), a);
    return;
  }
  const size_t smem = size_t(a.nh) * size_t(a.ihd + 1) * sizeof(float);
  if (smem > kSharedBytes)
    throw std::invalid_argument("indexer: " + std::to_string(a.nh) + " heads of " + std::to_string(a.ihd) +
                                " dims need " + std::to_string(smem) + " bytes of shared memory, at most " +
                                std::to_string(kSharedBytes));
  // Each block pays for staging the queries, so it takes a few entries per warp.
  const dim3 grid(
      unsigned(std::clamp<int64_t>((most_visible + kEntriesPerBlock - 1) / kEntriesPerBlock, 1, kMaxScoreBlocks)),
      unsigned(S));
  launch("index_scores_kernel", index_scores_kernel, grid, kScoreThreads, smem, native(stream), a);
}

}  // namespace

bool indexer_scores(const GpuLayerParams& lp, const Config& c, int64_t p0, int64_t S) {
  // Visible entries grow with the position: the batch's last token sees the most.
  return lp.index_comp.ratio > 0 && (p0 + S) / int64_t(lp.index_comp.ratio) > int64_t(c.index_topk);
}

void indexer_select(const GpuLayerParams& lp, const Config& c, const GpuLayerState& st, int64_t p0, int64_t S,
                    AttentionScratch& sc, Stream stream) {
  if (S <= 0) return;
  const int64_t ratio = lp.index_comp.ratio, topk = c.index_topk;
  const int64_t nh = c.index_n_heads, ihd = c.index_head_dim;
  // Visible entries grow with the position: the batch's last token sees the most.
  const int64_t most_visible = (p0 + S) / ratio;
  if (most_visible > sc.max_index_entries || most_visible > st.index_comp.n_entries)
    throw std::length_error("indexer: " + std::to_string(most_visible) + " visible entries, but scratch holds " +
                            std::to_string(sc.max_index_entries) + " and the indexer compressor emitted " +
                            std::to_string(st.index_comp.n_entries));
  if (indexer_scores(lp, c, p0, S)) {
    const ScoreArgs a{sc.idx_q,
                      sc.idx_w,
                      st.index_comp.entries,
                      lp.rope->cos,
                      lp.rope->sin,
                      sc.idx_scores,
                      p0,
                      sc.max_index_entries,
                      topk,
                      int32_t(ratio),
                      int32_t(nh),
                      int32_t(ihd),
                      lp.rope->half,
                      float(1.0 / std::sqrt(double(nh))),
                      float(1.0 / std::sqrt(double(ihd)))};
    launch_index_scores(a, S, most_visible, stream);
  }
  SelectArgs a{sc.idx_scores, sc.sel, sc.n_sel, p0, sc.max_index_entries, topk, sc.index_topk, int32_t(ratio)};
  launch("index_select_kernel", index_select_kernel, unsigned(S), kSelectThreads, 0, native(stream), a);
}

}  // namespace moepage::ds4::gpu
