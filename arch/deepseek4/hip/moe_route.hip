// The router on the GPU (moe.hpp route(), moe_route.hpp): scores, top-k and weights of each
// token on the device, a non-finite score offered to the batch's fault record, and for a decode
// step routed on the device the token's group record written by the router's last thread.
#include <limits>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/moe.hpp"
#include "deepseek4/hip/moe_route.hpp"
#include "deepseek4/hip/moe_scratch.hpp"
#include "deepseek4/hip/ops.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kRouteBlock = 128;

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
// expert's pairs in j order). The ids go to keep[0..k) for the pager's accounting, and keep[k] = 1
// flags ids the host did not expect (out of range, or another number of distinct experts): the
// record is then still safe to read (nb groups over valid experts) and the forward call fails once
// the batch is done. One thread.
__device__ void build_token_record(const int32_t* idx, int32_t k, int32_t E, const TokenRecord& rec) {
  int32_t ids[kMaxDeviceTopK], js[kMaxDeviceTopK];
  bool bad = false;
  for (int32_t j = 0; j < k; ++j) {
    int32_t e = idx[j];
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
  rec.keep[k] = bad ? 1 : 0;
}

// One block per token. Scores in parallel; the softmax sum, the top-k insertion and the weight
// normalisation on thread 0 in the CPU's order (E is a few hundred: microseconds).
__global__ void route_kernel(const float* logits, int32_t E, int32_t k, int scoring, const int32_t* tid2eid,
                             const int32_t* tokens, int32_t vocab, const float* bias, double scaling, int32_t* idx_out,
                             float* w_out, RouterFault* fault, int32_t layer, int64_t p0, const int32_t* forced,
                             TokenRecord record) {
  kernel_entry();
  extern __shared__ float shared[];
  float* scores = shared;
  float* biased = shared + E;
  const int64_t s = blockIdx.x;
  const float* l = logits + s * E;
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
      if (scoring == kSigmoid) {
        scores[i] = float(1.0 / (1.0 + exp(-x)));
      } else {
        const double sp = x > 20.0 ? x : log1p(exp(x));
        scores[i] = float(sqrt(sp));
      }
    }
  }
  __syncthreads();
  if (!tid2eid)
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
  // Scored top-k by the first warp: k rounds of a warp argmax under ranks_before (a strict total
  // order, so the k winners and their order are the CPU insertion sort's). Lane l owns experts
  // l, l + warp, ...; `taken` marks its winners (up to 64 per lane, E <= 64 * warp).
  const bool warp_top_k = !tid2eid && !forced && E <= 64 * MP_WARP_SIZE;
  if (warp_top_k && threadIdx.x < MP_WARP_SIZE) {
    const int32_t lane = int32_t(threadIdx.x);
    uint64_t taken = 0;
    for (int32_t j = 0; j < k; ++j) {
      int32_t best = -1;
      for (int32_t i = lane, m = 0; i < E; i += MP_WARP_SIZE, ++m)
        if (!((taken >> m) & 1u) && (best < 0 || ranks_before(biased, i, best))) best = i;
      for (int off = MP_WARP_SIZE / 2; off > 0; off >>= 1) {
        const int32_t other = MP_SHFL_XOR(best, off);
        if (other >= 0 && (best < 0 || ranks_before(biased, other, best))) best = other;
      }
      if (best % MP_WARP_SIZE == lane) taken |= uint64_t(1) << (best / MP_WARP_SIZE);
      if (lane == 0) idx[j] = best;
    }
  }
  if (threadIdx.x != 0) return;
  if (forced) {  // a ForcedRouting's experts (checked on the host), weighted by this router's scores
    for (int32_t j = 0; j < k; ++j) idx[j] = forced[s * k + j];
  } else if (tid2eid) {
    const int32_t tok = tokens[s];
    // Ids are checked on the host; one outside the table must still not read out of bounds.
    if (tok < 0 || tok >= vocab) {
      for (int32_t j = 0; j < k; ++j) {
        idx[j] = -1;
        w[j] = 0.0f;
      }
      if (record.groups) build_token_record(idx, k, E, record);  // flagged: the call fails
      return;
    }
    for (int32_t j = 0; j < k; ++j) idx[j] = tid2eid[int64_t(tok) * k + j];
  } else if (!warp_top_k) {
    int32_t have = 0;
    for (int32_t i = 0; i < E; ++i) {
      if (have == k && !ranks_before(biased, i, idx[k - 1])) continue;
      int32_t pos = have < k ? have++ : k - 1;
      while (pos > 0 && ranks_before(biased, i, idx[pos - 1])) {
        idx[pos] = idx[pos - 1];
        --pos;
      }
      idx[pos] = i;
    }
  }
  double sum = 0;
  for (int32_t j = 0; j < k; ++j) sum += scores[idx[j]];
  const double scale = scaling / (sum + 1e-20);
  for (int32_t j = 0; j < k; ++j) w[j] = float(double(scores[idx[j]]) * scale);
  if (record.groups) build_token_record(idx, k, E, record);
}

}  // namespace

// route() that may also leave one token's group record on the device (TokenRecord).
void launch_route(const GpuLayerParams& lp, const Config& c, const int32_t* tokens, int64_t S, const float* logits,
                  int32_t* idx, float* weights, Stream stream, RouterFault* fault, uint32_t layer, int64_t p0,
                  const int32_t* forced, const TokenRecord& record) {
  if (S <= 0) return;
  const int32_t E = int32_t(c.n_routed_experts), k = int32_t(c.num_experts_per_tok);
  if (k <= 0 || k > E)
    throw GpuError("gpu route: num_experts_per_tok " + std::to_string(k) + " must be in 1.." + std::to_string(E));
  const bool hash = lp.mlp == MlpKind::HashMoe;
  if (hash && !lp.tid2eid) throw GpuError("gpu route: hash-routed layer without its device tid2eid table");
  if (!hash && !lp.gate_bias) throw GpuError("gpu route: scored layer without its device gate bias");
  launch("gpu route", route_kernel, unsigned(S), kRouteBlock, size_t(2 * E) * sizeof(float), native(stream), logits, E,
         k, scoring_code(c.scoring_func), hash ? lp.tid2eid : nullptr, tokens, int32_t(c.vocab_size), lp.gate_bias,
         c.routed_scaling_factor, idx, weights, fault, int32_t(layer), p0, forced, record);
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
