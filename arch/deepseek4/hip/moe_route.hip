// The router on the GPU (moe.hpp route(), moe_route.hpp): scores, top-k and weights of each
// token on the device, a non-finite score offered to the batch's fault record, and for a decode
// step routed on the device the token's group record written by the router's last thread.
#include <algorithm>
#include <limits>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/dynamic_shared.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/moe.hpp"
#include "deepseek4/hip/moe_route.hpp"
#include "deepseek4/hip/moe_scratch.hpp"
#include "deepseek4/hip/ops.hpp"
#include "deepseek4/hip/row_gemv.hpp"
#include "deepseek4/hip/row_gemv_staged.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kRouteBlock = 256;  // a thread per expert of Flash's 256 for the scores

enum ScoringCode : int { kSqrtSoftplus = 0, kSigmoid = 1, kSoftmax = 2 };

int scoring_code(ScoringFunc f) {
  switch (f) {
    case ScoringFunc::Sigmoid: return kSigmoid;
    case ScoringFunc::Softmax: return kSoftmax;
    default: return kSqrtSoftplus;
  }
}

// "a ranks before b" of cpu::top_k: larger first, NaN last, lower index on ties.
__device__ inline bool ranks_before(const float* v, int32_t a, int32_t b) {
  const float va = v[a], vb = v[b];
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb) return nb;
  if (!na && va != vb) return va > vb;
  return a < b;
}

// Offers one non-finite score to the batch's fault record (moe_scratch.hpp says which one wins).
__device__ void record_router_fault(RouterFault* fault, unsigned long long launch, int64_t s, int32_t token,
                                    int32_t expert, bool biased, float value) {
  using namespace router_fault;
  const unsigned long long held = atomicCAS(&fault->launch, 0ull, launch);
  if (held != 0 && held != launch) return;  // an earlier launch's fault stands
  const unsigned long long order = (uint64_t(s) & 0xfffff) << 16 | (uint64_t(expert) & 0xffff);
  const unsigned long long value_class = isnan(value) ? 0 : value > 0 ? 1 : 2;
  const unsigned long long id = token >= 0 && uint64_t(token) < kTokenMask ? uint64_t(token) + 1 : 0;
  const unsigned long long key = (~order & 0xfffffffffull) << kExpertShift | (biased ? 1ull : 0ull) << kBiasedShift |
                                 value_class << kClassShift | id;
  atomicMax(&fault->key, key);
}

// One token's group record from its k routed ids, as the host builds it (experts ascending, each
// expert's pairs in j order; under a lookup the hits first, then the misses, each ascending). The
// ids go to keep[0..k) for the pager's accounting, and keep[k] = 1 flags ids the host did not
// expect (out of range, or another number of distinct experts): the record is then still safe to
// read (nb groups over valid experts) and the forward call fails once the batch is done (under a
// lookup nothing launches: gate is all zero). Returns the misses of a lookup (0 without one). One
// thread.
__device__ int32_t build_token_record(const int32_t* idx, int32_t k, int32_t E, const TokenRecord& rec) {
  int32_t ids[kMaxDeviceTopK], js[kMaxDeviceTopK], loaded[kMaxDeviceTopK];
  bool bad = false;
  // Every id before the first store: a store to rec could alias idx, and each load after one
  // would wait for it (a memory round trip per id).
  for (int32_t j = 0; j < k; ++j) loaded[j] = idx[j];
  for (int32_t j = 0; j < k; ++j) {
    int32_t e = loaded[j];
    rec.keep[j] = e;
    if (e < 0 || e >= E) {
      bad = true;
      e = 0;
    }
    int32_t at = j;  // insertion by expert; equal experts keep j order
    while (at > 0 && ids[at - 1] > e) {
      ids[at] = ids[at - 1];
      js[at] = js[at - 1];
      --at;
    }
    ids[at] = e;
    js[at] = j;
  }
  int32_t distinct = 0;
  for (int32_t i = 0; i < k; ++i) distinct += (i == 0 || ids[i] != ids[i - 1]) ? 1 : 0;
  const int32_t nb = rec.nb;
  bad = bad || distinct != nb;
  int32_t* experts = rec.groups;
  int32_t* starts = rec.groups + nb;
  int32_t* tokens = rec.groups + 2 * nb + 1;
  int32_t* pairs = tokens + k;
  rec.keep[k] = bad ? 1 : 0;
  if (bad || !rec.lookup) {
    for (int32_t i = 0, g = -1; i < k; ++i) {
      tokens[i] = 0;
      pairs[i] = js[i];
      if (bad) {
        if (i < nb) experts[i] = ids[i], starts[i] = i;
      } else if (i == 0 || ids[i] != ids[i - 1]) {
        experts[++g] = ids[i];
        starts[g] = i;
      }
    }
    starts[nb] = k;
    if (rec.gate)
      for (int32_t i = 0; i < 4; ++i) rec.gate[i] = 0;
    return 0;
  }
  // Under a lookup: the groups whose expert has a slot first, then the rest, each ascending.
  bool hit[kMaxDeviceTopK];
  for (int32_t i = 0; i < k; ++i) hit[i] = rec.lookup[ids[i]] != nullptr;
  int32_t g = 0, at = 0, hits = 0;
  for (int32_t pass = 0; pass < 2; ++pass) {
    const bool want = pass == 0;
    for (int32_t i = 0; i < k; ++i) {
      if (hit[i] != want) continue;
      if (i == 0 || ids[i] != ids[i - 1]) {
        experts[g] = ids[i];
        starts[g++] = at;
      }
      tokens[at] = 0;
      pairs[at++] = js[i];
    }
    if (want) hits = g;
  }
  starts[nb] = k;
  rec.gate[0] = 0;
  rec.gate[1] = hits;
  rec.gate[2] = hits;
  rec.gate[3] = nb;
  return nb - hits;
}

// The token's k ids into the mapped host row of record.host_ids, then (under a lookup) the count
// of misses, then the stamp the host spins on; the fence makes the rest visible before it. One
// thread.
__device__ void publish_host_ids(const int32_t* ids, int32_t k, const TokenRecord& rec, int32_t misses = 0) {
  if (!rec.host_ids) return;
  volatile int32_t* row = rec.host_ids;
  for (int32_t j = 0; j < k; ++j) row[j] = ids[j];
  const int32_t stamp_at = rec.lookup ? k + 1 : k;
  if (rec.lookup) row[k] = misses;
  __threadfence_system();
  row[stamp_at] = int32_t(rec.stamp);
}

// Scored top-k by the first warp with every lane's experts in registers (E <= kLaneExperts *
// warp): k rounds of a warp argmax of (score, expert) pairs under ranks_before, so the k winners
// and their order are the CPU insertion sort's. Lane l owns experts l, l + warp, ...; `live` marks
// those not yet taken. Each round is a scan of 8 registers and one shuffle butterfly, where the
// earlier version re-read shared memory for every comparison. (The routing as a whole still takes
// 6-12 us at the end of gate_route_kernel on the H100; this alone did not shorten it measurably.)
constexpr int kLaneExperts = 8;

// ranks_before on (value, index) pairs already loaded; index < 0 is "none" and ranks last.
__device__ inline bool pair_ranks_before(float va, int32_t a, float vb, int32_t b) {
  if (b < 0) return a >= 0;
  if (a < 0) return false;
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb) return nb;
  if (!na && va != vb) return va > vb;
  return a < b;
}

__device__ void warp_top_k(const float* biased, int32_t E, int32_t k, int32_t* chosen) {
  const int32_t lane = int32_t(threadIdx.x);
  float v[kLaneExperts];
  uint32_t live = 0;
#pragma unroll
  for (int m = 0; m < kLaneExperts; ++m) {
    const int32_t i = lane + m * MP_WARP_SIZE;
    v[m] = i < E ? biased[i] : 0.0f;
    live |= i < E ? 1u << m : 0u;
  }
  for (int32_t j = 0; j < k; ++j) {
    float best_v = 0.0f;
    int32_t best = -1;
#pragma unroll
    for (int m = 0; m < kLaneExperts; ++m) {
      const int32_t i = lane + m * MP_WARP_SIZE;
      if (((live >> m) & 1u) && pair_ranks_before(v[m], i, best_v, best)) {
        best_v = v[m];
        best = i;
      }
    }
    for (int off = MP_WARP_SIZE / 2; off > 0; off >>= 1) {
      const float other_v = MP_SHFL_XOR(best_v, off);
      const int32_t other = MP_SHFL_XOR(best, off);
      if (pair_ranks_before(other_v, other, best_v, best)) {
        best_v = other_v;
        best = other;
      }
    }
    if (best >= 0 && best % MP_WARP_SIZE == lane) live &= ~(1u << (best / MP_WARP_SIZE));
    if (lane == 0) chosen[j] = best;
  }
}

// What route_block needs of a layer and a batch (route_args builds it).
struct RouteArgs {
  const float* logits;
  int32_t E, k;
  int scoring;
  const int32_t* tid2eid;
  const int32_t* tokens;
  int32_t vocab;
  const float* bias;
  double scaling;
  int32_t* idx_out;
  float* w_out;
  RouterFault* fault;
  int32_t layer;
  int64_t p0;
  const int32_t* forced;
  TokenRecord record;
};

// Shared bytes route_block needs.
size_t route_shared_bytes(int32_t E, int32_t k) { return size_t(2 * E + k) * sizeof(float); }

// Token s's routing by one whole block (every thread calls it), `shared` route_shared_bytes long:
// a thread per expert for the scores (double, like the CPU); the softmax sum, the weight
// normalisation and the group record on thread 0 in the CPU's order (the threads fetch a hash
// layer's k ids while the scores are computed: two dependent loads off the serial tail).
__device__ void route_block(const RouteArgs& a, int64_t s, float* shared) {
  const int32_t E = a.E, k = a.k, scoring = a.scoring, vocab = a.vocab, layer = a.layer;
  const int32_t *tid2eid = a.tid2eid, *tokens = a.tokens, *forced = a.forced;
  const float* bias = a.bias;
  const double scaling = a.scaling;
  int32_t* idx_out = a.idx_out;
  float* w_out = a.w_out;
  RouterFault* fault = a.fault;
  const int64_t p0 = a.p0;
  const TokenRecord& record = a.record;
  float* scores = shared;
  float* biased = shared + E;
  // The k chosen ids, in shared memory until the end: thread 0's serial tail reads them several
  // times, and read back from global memory after stores that might alias them, each read would
  // wait for a round trip. A hash layer's are fetched here at the start (-2: the token is outside
  // the table).
  int32_t* chosen = reinterpret_cast<int32_t*>(shared + 2 * E);
  const volatile float* l = a.logits + s * E;  // other blocks' writes in the fused kernel: bypass L1
  if (tid2eid && !forced) {
    const int32_t tok = tokens[s];
    // Ids are checked on the host; one outside the table must still not read out of bounds. A
    // loop, since k may exceed the block (the fused kernel's block can be one warp).
    for (int32_t j = threadIdx.x; j < k; j += blockDim.x)
      chosen[j] = tok >= 0 && tok < vocab ? tid2eid[int64_t(tok) * k + j] : -2;
  }
  if (scoring == kSoftmax) {
    if (threadIdx.x == 0) {
      float m = l[0];
      for (int32_t i = 1; i < E; ++i) m = fmaxf(m, l[i]);
      double sum = 0;
      for (int32_t i = 0; i < E; ++i) {
        const double e = exp(double(l[i]) - double(m));
        scores[i] = float(e);
        sum += e;
      }
      const double inv = 1.0 / sum;
      for (int32_t i = 0; i < E; ++i) scores[i] = float(double(scores[i]) * inv);
    }
  } else {
    for (int32_t i = threadIdx.x; i < E; i += blockDim.x) {
      const double x = l[i];
      float sc;
      if (scoring == kSigmoid) {
        sc = float(1.0 / (1.0 + exp(-x)));
      } else {
        const double sp = x > 20.0 ? x : log1p(exp(x));
        sc = float(sqrt(sp));
      }
      scores[i] = sc;
      if (!tid2eid) biased[i] = sc + bias[i];
    }
  }
  __syncthreads();
  if (scoring == kSoftmax && !tid2eid)
    for (int32_t i = threadIdx.x; i < E; i += blockDim.x) biased[i] = scores[i] + bias[i];
  __syncthreads();
  // A NaN or Inf would choose and weight experts by the quirks of the comparisons: the output
  // would be wrong with no sign. The host turns the record into an error (2E comparisons).
  if (fault)
    for (int32_t i = threadIdx.x; i < E; i += blockDim.x) {
      const bool bad_score = !isfinite(scores[i]), bad_biased = !tid2eid && !isfinite(biased[i]);
      if (bad_score || bad_biased) {
        record_router_fault(fault, uint64_t(p0) << 16 | uint64_t(layer + 1), s, tokens ? tokens[s] : -1, i, !bad_score,
                            bad_score ? scores[i] : biased[i]);
        break;
      }
    }
  int32_t* idx = idx_out + s * k;
  float* w = w_out + s * k;
  const bool registers_top_k = !tid2eid && !forced && E <= kLaneExperts * MP_WARP_SIZE;
  if (registers_top_k && threadIdx.x < MP_WARP_SIZE) warp_top_k(biased, E, k, chosen);
  if (threadIdx.x != 0) return;
  if (forced) {  // a ForcedRouting's experts (checked on the host), weighted by this router's scores
    for (int32_t j = 0; j < k; ++j) chosen[j] = forced[s * k + j];
  } else if (tid2eid && chosen[0] == -2) {
    for (int32_t j = 0; j < k; ++j) {
      chosen[j] = -1;
      idx[j] = -1;
      w[j] = 0.0f;
    }
    const int32_t misses = record.groups ? build_token_record(chosen, k, E, record) : 0;  // flagged: the call fails
    publish_host_ids(chosen, k, record, misses);  // -1: the host's check fails the call
    return;
  } else if (!tid2eid && !registers_top_k) {
    int32_t have = 0;
    for (int32_t i = 0; i < E; ++i) {
      if (have == k && !ranks_before(biased, i, chosen[k - 1])) continue;
      int32_t pos = have < k ? have++ : k - 1;
      while (pos > 0 && ranks_before(biased, i, chosen[pos - 1])) {
        chosen[pos] = chosen[pos - 1];
        --pos;
      }
      chosen[pos] = i;
    }
  }
  double sum = 0;
  for (int32_t j = 0; j < k; ++j) sum += scores[chosen[j]];
  const double scale = scaling / (sum + 1e-20);
  for (int32_t j = 0; j < k; ++j) {
    idx[j] = chosen[j];
    w[j] = float(double(scores[chosen[j]]) * scale);
  }
  if (record.lookup) {  // the misses go with the ids: the record first
    publish_host_ids(chosen, k, record, build_token_record(chosen, k, E, record));
    return;
  }
  publish_host_ids(chosen, k, record);
  if (record.groups) build_token_record(chosen, k, E, record);
}

__global__ void route_kernel(RouteArgs a) {
  kernel_entry();
  extern __shared__ float shared[];
  route_block(a, blockIdx.x, shared);
}

// One token's router logits (the single-token product of row_gemv.hpp, as matmul_gemv_kernel)
// and, in the block that finishes last (a ticket), its routing: the router's launch and its wait
// for the logits leave the decode step's serial chain. The ticket returns to zero for the next
// launch.
template <WeightCode W, int CPT, int S>
__global__ void __launch_bounds__(kGemvMaxSlices* kGemvLanes)
    gate_route_kernel(DeviceMat gate, const float* x, int64_t rows_per_block, uint32_t* ticket, RouteArgs a) {
  kernel_entry();
  __shared__ float partial[kGemvMaxSlices * kGemvMaxRows];
  __shared__ bool finishes;
  extern __shared__ uint4 gemv_ring[];
  int64_t r1;
  const int64_t r0 = gemv_block_rows(gate.rows, rows_per_block, r1);
  float xv[CPT][elems_per_chunk<W>()];
  gemv_load_x<W, CPT>(x, threadIdx.x, blockDim.x, xv);
  const DeviceMat mats[1] = {gate};
  gemv_rows_any<W, CPT, 1, S>(mats, r0, r1, xv, partial, gemv_ring);
  __syncthreads();
  float* logits = const_cast<float*>(a.logits);  // this kernel writes what its routing reads
  for (int64_t i = threadIdx.x; i < r1 - r0; i += blockDim.x) logits[r0 + i] = gemv_total(partial, 0, i);
  __threadfence();  // this block's logits before its ticket
  __syncthreads();
  if (threadIdx.x == 0) finishes = atomicAdd(ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!finishes) return;
  if (threadIdx.x == 0) *ticket = 0;
  __threadfence();
  route_block(a, 0, reinterpret_cast<float*>(gemv_ring));
}

// The router's arguments for layer lp, refusing a layer it cannot route (both launchers' checks).
RouteArgs route_args(const GpuLayerParams& lp, const Config& c, const int32_t* tokens, const float* logits,
                     int32_t* idx, float* weights, RouterFault* fault, uint32_t layer, int64_t p0,
                     const int32_t* forced, const TokenRecord& record) {
  const int32_t E = int32_t(c.n_routed_experts), k = int32_t(c.num_experts_per_tok);
  if (k <= 0 || k > E)
    throw GpuError("gpu route: num_experts_per_tok " + std::to_string(k) + " must be in 1.." + std::to_string(E));
  const bool hash = lp.mlp == MlpKind::HashMoe;
  if (hash && !lp.tid2eid) throw GpuError("gpu route: hash-routed layer without its device tid2eid table");
  if (!hash && !lp.gate_bias) throw GpuError("gpu route: scored layer without its device gate bias");
  return RouteArgs{logits,
                   E,
                   k,
                   scoring_code(c.scoring_func),
                   hash ? lp.tid2eid : nullptr,
                   tokens,
                   int32_t(c.vocab_size),
                   lp.gate_bias,
                   c.routed_scaling_factor,
                   idx,
                   weights,
                   fault,
                   int32_t(layer),
                   p0,
                   forced,
                   record};
}

}  // namespace

// route() that may also leave one token's group record on the device (TokenRecord).
void launch_route(const GpuLayerParams& lp, const Config& c, const int32_t* tokens, int64_t S, const float* logits,
                  int32_t* idx, float* weights, Stream stream, RouterFault* fault, uint32_t layer, int64_t p0,
                  const int32_t* forced, const TokenRecord& record) {
  if (S <= 0) return;
  const RouteArgs a = route_args(lp, c, tokens, logits, idx, weights, fault, layer, p0, forced, record);
  launch("gpu route", route_kernel, unsigned(S), kRouteBlock, route_shared_bytes(a.E, a.k), native(stream), a);
}

bool gate_and_route(const GpuLayerParams& lp, const Config& c, const int32_t* tokens, const float* x, float* logits,
                    int32_t* idx, float* weights, uint32_t* ticket, Stream stream, RouterFault* fault, uint32_t layer,
                    int64_t p0, const int32_t* forced, const TokenRecord& record) {
  const RouteArgs a = route_args(lp, c, tokens, logits, idx, weights, fault, layer, p0, forced, record);
  const GemmPolicy policy = selection_policy(lp.gemm);
  if (!ticket || policy.library(1) || policy.matrix(1) || lp.gate.rows != a.E) return false;
  const WeightCode code = weight_code(lp.gate, "gpu gate");
  const DeviceMat m = device_mat(lp.gate);
  if (!single_token_applies(m, code, x)) return false;
  const GemvShape shape = gemv_shape(code, row_bytes_of(code, m.cols) / 16);
  const int64_t per_block = gemv_rows_per_block(m.rows, 1, shape.slices);
  const unsigned grid = unsigned((m.rows + per_block - 1) / per_block);
  with_gemv_stages(policy.gemv_stages, [&](auto st) {
    constexpr int S = decltype(st)::value;
    with_gemv_kernel(code, shape, [&](auto wc, auto cpt) {
      constexpr int CPT = decltype(cpt)::value;
      constexpr WeightCode W = decltype(wc)::value;
      constexpr int R = gemv_ring_steps(W, S, CPT, 1);
      const auto kernel = gate_route_kernel<W, CPT, R>;
      const unsigned threads = unsigned(shape.slices * kGemvLanes);
      const size_t shared = std::max(gemv_ring_bytes(R, CPT, 1, int(threads)), route_shared_bytes(a.E, a.k));
      allow_dynamic_shared(reinterpret_cast<const void*>(kernel), shared);
      launch("gpu gate and route (single token)", kernel, grid, threads, shared, native(stream), m, x, per_block,
             ticket, a);
    });
  });
  return true;
}

void route(const GpuLayerParams& lp, const Config& c, const int32_t* tokens, int64_t S, const float* logits,
           int32_t* idx, float* weights, Stream stream, RouterFault* fault, uint32_t layer, int64_t p0,
           const int32_t* forced) {
  launch_route(lp, c, tokens, S, logits, idx, weights, stream, fault, layer, p0, forced, TokenRecord{});
}

void fetch_router_fault(MoeScratch& sc, Stream stream) {
  download_async(sc.fault_host, sc.fault, sizeof(RouterFault), stream);
}

void throw_if_router_fault(MoeScratch& sc, Stream stream) {
  using namespace router_fault;
  const RouterFault f = *sc.fault_host;
  if (!f.key && !f.scale) return;
  *sc.fault_host = RouterFault{};
  MP_GPU_CHECK(hipMemsetAsync(sc.fault, 0, sizeof(RouterFault), native(stream)));
  synchronize(stream);
  if (f.scale) {  // expert_scale_fault_key | the scale byte
    const unsigned byte = unsigned(f.scale & 0xff);
    throw std::runtime_error(
        "routed experts of layer " + std::to_string((f.scale >> 40) - 1) + ": expert " +
        std::to_string((f.scale >> 8) & 0xffffffffull) + " has an FP4 block scale " +
        (byte == 0xff ? std::string("NaN") : "2^" + std::to_string(int(byte) - 127)) +
        ", past the fp16 expert products' range (up to 2^13); set arch.matrix_expert_precision: split-bf16");
  }
  const uint64_t order = ~(f.key >> kExpertShift) & 0xfffffffffull;
  const uint64_t layer = (f.launch & 0xffff) - 1, position = (f.launch >> 16) + (order >> 16);
  const uint64_t value_class = (f.key >> kClassShift) & 3;
  const int64_t token = int64_t(f.key & kTokenMask) - 1;
  const float value = value_class == 0   ? std::numeric_limits<float>::quiet_NaN()
                      : value_class == 1 ? std::numeric_limits<float>::infinity()
                                         : -std::numeric_limits<float>::infinity();
  throw std::runtime_error("router of layer " + std::to_string(layer) + ": token at position " +
                           std::to_string(position) + " (id " + std::to_string(token) + ") has a non-finite " +
                           ((f.key >> kBiasedShift) & 1 ? "biased score " : "score ") + std::to_string(value) +
                           " for expert " + std::to_string(order & 0xffff));
}

}  // namespace moepage::ds4::gpu
