// The MoE block on the GPU (moe.hpp). One step of a layer:
//   gate matmul -> route (device) -> [scored layers: ids to the host: one token's written by the
//      router into mapped memory (ModelOptions::direct_hits, mapped_ids.hpp), else by a copy to
//      pinned memory and an event]
//   (the shared expert on a side stream from the start, joined before the combine)
//   -> per band of experts: acquire_start (slots of all, which are still being read),
//      pointer-table row upload if it changed, group upload (ready experts first), then
//      w1/w3 + SwiGLU kernel and w2 kernel for the ready experts, and for each pending expert
//      a device wait on its bytes and its two kernels (all find the slot through the device
//      table); acquire_finish (the host waits for the reads while the GPU computes; a failed
//      read throws), for a layer's last band deferred to the batch's end under
//      ModelOptions::defer_acquire_finish (moe_finish.hpp), so the host queues the next layer
//      while these reads land
//   -> combine in j order (no atomics: the same bits every run; the kernel variant is the
//      layer's, whatever the grouping).
// A decode step over a source whose slots never move skips the host instead: the router writes
// the token's group record on the device (moe_route.hip) and the kernels follow; the source hears
// of the experts after the step (moe_device_routing.hip).
#include "deepseek4/hip/moe.hpp"

#include <cstddef>

#include <algorithm>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/moe_band.hpp"
#include "deepseek4/hip/moe_device_routing.hpp"
#include "deepseek4/hip/moe_experts.hpp"
#include "deepseek4/hip/moe_finish.hpp"
#include "deepseek4/hip/moe_mma.hpp"
#include "deepseek4/hip/moe_route.hpp"
#include "deepseek4/hip/moe_scratch.hpp"
#include "deepseek4/hip/moe_slot_table.hpp"
#include "deepseek4/hip/ops.hpp"
#include "deepseek4/hip/row_dot.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int kBlock = 256;

unsigned blocks_for(int64_t n, int64_t per_block = kBlock) {
  return unsigned(std::max<int64_t>(1, (n + per_block - 1) / per_block));
}

// out[s] (holding the shared expert) += sum_j w[s, j] * ex_out[s*k + j], j in order.
__global__ void combine_kernel(const float* weights, const float* ex_out, int64_t S, int32_t k, int64_t D, float* out) {
  kernel_entry();
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= S * D) return;
  const int64_t s = id / D, d = id % D;
  float acc = out[id];
  for (int32_t j = 0; j < k; ++j) acc += weights[s * k + j] * ex_out[(s * k + j) * D + d];
  out[id] = acc;
}

// The encoding of one expert part, checked as matmul checks a weight ([rows, cols] as stored;
// the offset stands in for the slot's address, slots being at least 16-byte aligned).
WeightCode part_code(const ExpertPart& p, int64_t rows, int64_t cols, uint32_t layer, const char* name) {
  const cpu::MatRef probe{p.dtype, rows, cols, reinterpret_cast<const std::byte*>(uintptr_t(256) + p.offset),
                          p.has_scale ? reinterpret_cast<const std::byte*>(uintptr_t(256) + p.scale_offset) : nullptr};
  const std::string what = "gpu moe layer " + std::to_string(layer) + " expert part " + name;
  return weight_code(probe, what.c_str());
}

// moe_streams_experts for a layer whose parts' codes moe() has already read.
bool streams_experts(const GpuLayerParams& lp, const ExpertLayout& layout, WeightCode up_code, WeightCode down_code,
                     int64_t D, int64_t I, int64_t max_tokens) {
  return lp.gemm.expert_stream && lp.gemm.expert_matrix(max_tokens) &&
         lp.gemm.expert_precision == ExpertPrecision::Fp16 &&
         expert_stream_applies(up_code, down_code, D, I, part_args(layout.w1), part_args(layout.w3),
                               part_args(layout.w2));
}

}  // namespace

bool moe_streams_experts(const GpuLayerParams& lp, const ExpertLayout& layout, const Config& c, int64_t max_tokens) {
  const int64_t D = c.hidden_size, I = c.moe_intermediate_size;
  return layout.w1.dtype == layout.w3.dtype && streams_experts(lp, layout, part_code(layout.w1, I, D, 0, "w1"),
                                                               part_code(layout.w2, D, I, 0, "w2"), D, I, max_tokens);
}

bool moe_single_token_fp16(const GpuLayerParams& lp, const ExpertLayout& layout, const Config& c) {
  const int64_t D = c.hidden_size, I = c.moe_intermediate_size;
  if (layout.w1.dtype != layout.w3.dtype) return false;
  const WeightCode up = part_code(layout.w1, I, D, 0, "w1"), down = part_code(layout.w2, D, I, 0, "w2");
  const PartArgs w1 = part_args(layout.w1), w3 = part_args(layout.w3), w2 = part_args(layout.w2);
  return lp.gemm.single_token && expert_mma_applies(up, down, D, I, w1, w3, w2, true) &&
         expert_fp4_single_applies(lp.gemm.expert_precision, up, down, D, I, w1, w3, w2);
}

namespace {

// The tid2eid row of a hash-routed layer for the host's token id tok (checked against the
// vocabulary: the row is read from host memory).
const int32_t* hash_row(const GpuLayerParams& lp, const Config& c, int32_t tok, const std::string& where) {
  if (!lp.tid2eid_host) throw GpuError(where + ": hash routing needs the host token ids and table");
  if (tok < 0 || uint32_t(tok) >= c.vocab_size)
    throw GpuError(where + ": token id " + std::to_string(tok) + " outside the vocabulary of " +
                   std::to_string(c.vocab_size));
  return lp.tid2eid_host + int64_t(tok) * c.num_experts_per_tok;
}

// The side stream a step's shared expert runs on, or null where it runs on the compute stream (a
// prompt batch under PromptShared::First, or Auto on the library; a decode step under First).
SideStream* shared_expert_side(MoeScratch& sc, int64_t S, const GemmPolicy& gemm) {
  const PromptShared where =
      prompt_shared_for(sc.prompt_shared, S, gemm.library(S) && library_gemm_available(), sc.decode_shared);
  if (where == PromptShared::Beside) return &sc.side;
  if (where == PromptShared::First) return nullptr;
  if (!sc.urgent_side) throw GpuError("gpu moe: the urgent shared-expert stream was not made");
  return &*sc.urgent_side;
}

// The end of every MoE step: the shared expert's side stream joins, and the routed experts are
// added to its output in j order.
void combine_experts(MoeScratch& sc, const GemmPolicy& gemm, int64_t S, int64_t k, int64_t D, float* out,
                     Stream stream) {
  if (SideStream* side = shared_expert_side(sc, S, gemm)) side->join(stream);
  if (sc.combine_joins_too) sc.combine_joins_too->join(stream);
  launch("gpu moe combine", combine_kernel, blocks_for(S * D), kBlock, 0, native(stream), sc.weights, sc.ex_out, S,
         int32_t(k), D, out);
}

}  // namespace

MoeScratch::~MoeScratch() {
  if (idx_ready) (void)hipEventDestroy(static_cast<hipEvent_t>(idx_ready));
  for (void* e : layer_copied)
    if (e) (void)hipEventDestroy(static_cast<hipEvent_t>(e));
}

std::unique_ptr<MoeScratch> allocate_moe_scratch(const Config& c, int64_t max_batch, DeviceArena& arena,
                                                 DeviceArena& pinned) {
  auto sc = std::make_unique<MoeScratch>();
  const int64_t S = max_batch, E = c.n_routed_experts, k = c.num_experts_per_tok, D = c.hidden_size,
                I = c.moe_intermediate_size, L = c.num_hidden_layers;
  sc->max_batch = S;
  sc->n_layers = uint32_t(L);
  sc->n_experts = uint32_t(E);
  sc->top_k = uint32_t(k);
  sc->logits = arena.take<float>(uint64_t(S * E));
  sc->idx = arena.take<int32_t>(uint64_t(S * k));
  sc->weights = arena.take<float>(uint64_t(S * k));
  sc->h1 = arena.take<float>(uint64_t(S * I));
  sc->h3 = arena.take<float>(uint64_t(S * I));
  sc->act = arena.take<float>(uint64_t(S * k * I));
  sc->x16 = arena.take<uint16_t>(uint64_t(S * D));
  sc->ex_out = arena.take<float>(uint64_t(S * k * D));
  sc->table = arena.take<const std::byte*>(uint64_t(L * E));
  sc->group_ints = 2 * E + 1 + 2 * S * k;
  sc->groups = arena.take<int32_t>(uint64_t(sc->group_ints));
  sc->fault = arena.take<RouterFault>(1);  // zero-filled: no fault
  sc->route_ticket = arena.take<uint32_t>(1);
  sc->idx_host = pinned.take<int32_t>(uint64_t(S * k));
  sc->mirror = pinned.take<const std::byte*>(uint64_t(L * E));
  sc->staging = pinned.take<int32_t>(uint64_t(L * sc->group_ints));
  sc->fault_host = pinned.take<RouterFault>(1);
  sc->routed_ids = arena.take<int32_t>(uint64_t(L * (k + 1)));
  sc->routed_ids_host = pinned.take<int32_t>(uint64_t(L * (k + 1)));
  sc->slot_gate = arena.take<int32_t>(4);
  sc->slot_row.assign(size_t(L), 0);
  sc->slot_generation.assign(size_t(L), 0);
  sc->stalls_queued.reserve(size_t(L));
  sc->residency.assign(size_t(E), nullptr);
  sc->routed_on_device.assign(size_t(L), 0);
  sc->fixed_table.assign(size_t(L), 0);
  sc->owes_finish.assign(size_t(L), 0);
  sc->count.assign(size_t(E), 0);
  sc->start.assign(size_t(E + 1), 0);
  sc->used.assign(size_t(E), 0);
  sc->pair_token.assign(size_t(S * k), 0);
  sc->pair_dest.assign(size_t(S * k), 0);
  sc->slots.assign(size_t(E), nullptr);
  sc->pending.assign(size_t(E), 0);
  sc->order.assign(size_t(E), 0);
  hipEvent_t e = nullptr;
  MP_GPU_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming));
  sc->idx_ready = e;
  sc->layer_copied.assign(size_t(L), nullptr);
  for (auto& ev : sc->layer_copied) {
    MP_GPU_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming));
    ev = e;
  }
  return sc;
}

void moe(const GpuLayerParams& lp, const Config& c, uint32_t layer, const int32_t* tokens_host, const int32_t* tokens,
         int64_t S, const float* yn, GpuExpertSource& source, const ExpertLayout& layout, MoeScratch& sc, float* out,
         MoeStats& stats, Stream stream, const int32_t* forced_host, const int32_t* forced_device,
         const ExpertParallel* ep) {
  if (S <= 0) {  // every return joins what the combine would have (sc.combine_joins_too)
    if (sc.combine_joins_too) sc.combine_joins_too->join(stream);
    return;
  }
  const int64_t D = c.hidden_size, I = c.moe_intermediate_size, E = c.n_routed_experts, k = c.num_experts_per_tok;
  const std::string where = "gpu moe layer " + std::to_string(layer);
  if (S > sc.max_batch)
    throw GpuError(where + ": batch of " + std::to_string(S) + " tokens exceeds the scratch's " +
                   std::to_string(sc.max_batch));
  if (layer >= sc.n_layers || E != sc.n_experts || k != sc.top_k)
    throw GpuError(where + ": scratch sized for " + std::to_string(sc.n_layers) + " layers of " +
                   std::to_string(sc.n_experts) + " experts top-" + std::to_string(sc.top_k));
  if (layout.hidden != D || layout.intermediate != I)
    throw GpuError(where + ": expert layout is " + std::to_string(layout.hidden) + "x" +
                   std::to_string(layout.intermediate) + ", expected hidden " + std::to_string(D) + " intermediate " +
                   std::to_string(I));
  if (layout.w1.dtype != layout.w3.dtype) throw GpuError(where + ": w1 and w3 of an expert must share one encoding");
  const WeightCode up_code = part_code(layout.w1, I, D, layer, "w1");
  (void)part_code(layout.w3, I, D, layer, "w3");
  const WeightCode down_code = part_code(layout.w2, D, I, layer, "w2");
  const bool hash = lp.mlp == MlpKind::HashMoe;
  hipStream_t st = native(stream);

  // The shared expert writes `out` on the side stream; the combine, after the join, adds the
  // routed experts to it. Of a rank group, rank 0 computes it and the others start from zero. A
  // prompt batch may run it first on the compute stream instead: there both chains fill the device,
  // and beside the routed experts' long kernel the shared expert's short ones can start late.
  SideStream* shared_side = shared_expert_side(sc, S, lp.gemm);
  const Stream side = shared_side ? shared_side->fork(stream) : stream;
  if (!ep || ep->rank == 0) {
    matmul_swiglu(lp.shared_w1, lp.shared_w3, yn, D, S, float(c.swiglu_limit), sc.h1, sc.h3, side, lp.gemm);
    matmul(lp.shared_w2, sc.h1, I, out, D, S, side, lp.gemm);
  } else {
    MP_GPU_CHECK(hipMemsetAsync(out, 0, size_t(S * D) * sizeof(float), native(side)));
  }

  // The router: one token's gate product and routing in one launch where it applies.
  auto gate_then_route = [&](const TokenRecord& record) {
    if (S == 1 && gate_and_route(lp, c, tokens, yn, sc.logits, sc.idx, sc.weights, sc.route_ticket, stream, sc.fault,
                                 layer, sc.position0, forced_device, record))
      return;
    matmul(lp.gate, yn, D, sc.logits, E, S, stream, selection_policy(lp.gemm));  // picks the experts
    launch_route(lp, c, tokens, S, sc.logits, sc.idx, sc.weights, stream, sc.fault, layer, sc.position0, forced_device,
                 record);
  };
  const float limit = float(c.swiglu_limit);
  const std::byte** table_row = sc.table + int64_t(layer) * E;
  // One token's shape as the host knows it before the router runs (the kernel variant and a
  // device-built record depend on it): a scored top-k has k distinct experts; hash or forced ids
  // are on the host already.
  auto known_token_shape = [&](int32_t& n_used, int32_t& max_count) {
    n_used = int32_t(k);
    max_count = 1;
    if (forced_host) {
      token_shape(forced_host, k, n_used, max_count);
    } else if (hash) {
      if (!tokens_host) throw GpuError(where + ": hash routing needs the host token ids and table");
      token_shape(hash_row(lp, c, tokens_host[0], where), k, n_used, max_count);
    }
  };

  // The launches of one token's experts from the record its router built on the device, for slots
  // 16-byte aligned (the variant planned once for the layer, as every path does).
  auto device_record_launch = [&](int32_t n_used, int32_t max_count) {
    ExpertLaunch x{table_row,
                   &layout,
                   up_code,
                   down_code,
                   D,
                   I,
                   sc.groups,
                   n_used,
                   int32_t(k),
                   max_count,
                   n_used,
                   expert_token_tile(k, n_used),
                   yn,
                   nullptr,
                   limit,
                   sc.act,
                   sc.ex_out,
                   lp.gemm.expert_precision,
                   ExpertScaleFault{scale_fault_word(sc.fault), layer},
                   stream};
    plan_expert_launch(x, lp.gemm, true);
    return x;
  };

  // Decode with slots that never move (a resident pager): the router's ids stay on the device,
  // where the router's last thread also builds the group record, so the host neither waits for
  // the ids nor uploads the record; the pager hears of the accesses once the batch is done
  // (account_device_routing). The host still knows the shape the kernel variant depends on.
  if (S == 1 && sc.device_routing && k <= kMaxDeviceTopK && layer_has_fixed_slots(sc, source, layer, E, st)) {
    int32_t n_used = 0, max_count = 0;
    known_token_shape(n_used, max_count);
    gate_then_route(TokenRecord{sc.groups, n_used, sc.routed_ids + int64_t(layer) * (k + 1)});
    // Every fixed slot is 16-byte aligned (layer_has_fixed_slots).
    ExpertLaunch x = device_record_launch(n_used, max_count);
    launch_expert_group(x, 0, n_used);
    sc.routed_on_device[layer] = 1;
    stats.routed_experts += uint64_t(k);
    combine_experts(sc, lp.gemm, S, k, D, out, stream);
    return;
  }

  // ModelOptions::slot_table (one token, one rank, a scored layer whose experts the source reports
  // valid): the router looks its experts up in the layer's device table, the hits launch at once,
  // the stall waits on the device for the host's reply where one missed, then the misses launch;
  // the host serves the stall once the whole step is queued (moe_slot_table.hpp).
  if (S == 1 && sc.slot_lookup && !hash && !ep && k <= kMaxDeviceTopK && uint32_t(k) <= source.max_batch() &&
      prepare_slot_lookup(sc, source, layer, E, stream)) {
    int32_t n_used = 0, max_count = 0;
    known_token_shape(n_used, max_count);
    const uint32_t stamp = sc.slot_stalls->next_stamp();
    gate_then_route(TokenRecord{sc.groups, n_used, sc.routed_ids + int64_t(layer) * (k + 1),
                                sc.slot_stalls->row_device(layer), stamp, table_row, sc.slot_gate});
    ExpertLaunch x = device_record_launch(n_used, max_count);  // prepare_slot_lookup admits aligned slots only
    x.range = sc.slot_gate;                                    // the hits
    launch_expert_group(x, 0, n_used);
    sc.slot_stalls->launch_stall(layer, stamp, sc.slot_gate, stream);
    x.range = sc.slot_gate + 2;  // the misses, once the stall wrote their slots
    launch_expert_group(x, 0, n_used);
    sc.stalls_queued.push_back(MoeScratch::QueuedStall{layer, stamp});
    ++stats.slot_lookups;
    ++stats.acquires;
    stats.routed_experts += uint64_t(k);
    combine_experts(sc, lp.gemm, S, k, D, out, stream);
    return;
  }

  // ModelOptions::direct_hits (one token, one rank): the router also builds the token's group
  // record on the device for the distinct experts the host expects, and a scored router sends its
  // ids through mapped memory (mapped_ids.hpp); the band below uses the device's record when every
  // expert hit in one band (the host's would be the same), else uploads its own over it.
  TokenRecord direct{};
  if (S == 1 && sc.mapped_ids && !ep && k <= kMaxDeviceTopK) {
    int32_t nb = 0, max_count = 0;
    known_token_shape(nb, max_count);
    direct = TokenRecord{sc.groups, nb, sc.routed_ids + int64_t(layer) * (k + 1)};
    if (!hash) {
      direct.host_ids = sc.mapped_ids->row_device(layer);
      direct.stamp = sc.mapped_ids->next_stamp();
    }
  }
  gate_then_route(direct);
  if (!hash && !direct.host_ids) {
    MP_GPU_CHECK(hipMemcpyAsync(sc.idx_host, sc.idx, size_t(S * k) * sizeof(int32_t), hipMemcpyDeviceToHost, st));
    MP_GPU_CHECK(hipEventRecord(static_cast<hipEvent_t>(sc.idx_ready), st));
  }

  if (hash && forced_host) {
    std::copy_n(forced_host, S * k, sc.idx_host);
  } else if (hash) {
    if (!tokens_host) throw GpuError(where + ": hash routing needs the host token ids and table");
    for (int64_t s = 0; s < S; ++s) std::copy_n(hash_row(lp, c, tokens_host[s], where), k, sc.idx_host + s * k);
  } else if (direct.host_ids) {
    sc.mapped_ids->await(layer, direct.stamp, stream, where, sc.idx_host);
  } else {
    MP_GPU_CHECK(hipEventSynchronize(static_cast<hipEvent_t>(sc.idx_ready)));
  }

  // Group the (token, j) pairs by expert, experts ascending, tokens ascending inside (the CPU's
  // counting sort).
  std::fill(sc.count.begin(), sc.count.end(), 0);
  for (int64_t i = 0; i < S * k; ++i) {
    const int32_t e = sc.idx_host[i];
    if (e < 0 || e >= E)
      throw GpuError(where + ": token " + std::to_string(i / k) + " routed to expert " + std::to_string(e) +
                     ", expected 0.." + std::to_string(E - 1));
    ++sc.count[size_t(e)];
  }
  int32_t n_used = 0;
  sc.start[0] = 0;
  for (int64_t e = 0; e < E; ++e) {
    sc.start[size_t(e + 1)] = sc.start[size_t(e)] + sc.count[size_t(e)];
    if (sc.count[size_t(e)]) sc.used[size_t(n_used++)] = int32_t(e);
    sc.count[size_t(e)] = 0;
  }
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = sc.idx_host[s * k + j];
      const int32_t at = sc.start[size_t(e)] + sc.count[size_t(e)]++;
      sc.pair_token[size_t(at)] = int32_t(s);
      sc.pair_dest[size_t(at)] = int32_t(s * k + j);
    }
  if (ep) {
    // A rank keeps the experts it owns. The combine still reads every (token, j) pair, so the
    // pairs of other ranks' experts must add exactly zero: their rows of ex_out are cleared.
    int32_t kept = 0;
    for (int32_t i = 0; i < n_used; ++i)
      if (ep->ownership->owner(layer, uint32_t(sc.used[size_t(i)])) == ep->rank)
        sc.used[size_t(kept++)] = sc.used[size_t(i)];
    n_used = kept;
    MP_GPU_CHECK(hipMemsetAsync(sc.ex_out, 0, size_t(S * k * D) * sizeof(float), st));
  }

  const uint32_t band = source.max_batch();
  if (band == 0) throw GpuError(where + ": the expert source serves 0 experts per call");
  hipEvent_t copied = static_cast<hipEvent_t>(sc.layer_copied[layer]);
  const std::byte** mirror = sc.mirror + int64_t(layer) * E;
  int32_t* staging = sc.staging + int64_t(layer) * sc.group_ints;

  // The kernel variant is chosen once per layer from all of its experts: the token tile from the
  // largest group, the tile and row plans for n_used experts. Every band and every group of a band
  // launches that same variant (only grid.y differs), so an expert's output has the same bits
  // whether the pager served the layer in one call or in bands, hits first or all at once.
  int32_t max_count = 0;
  for (int32_t i = 0; i < n_used; ++i) {
    const int32_t e = sc.used[size_t(i)];
    max_count = std::max(max_count, sc.start[size_t(e + 1)] - sc.start[size_t(e)]);
  }

  // The streamed tiles take the layer's tokens rounded to fp16 once, whichever bands and groups
  // then launch; a band whose slots are not aligned for the matrix cores takes the CUDA cores.
  const uint16_t* x16 = nullptr;
  if (streams_experts(lp, layout, up_code, down_code, D, I, max_count) && reinterpret_cast<uintptr_t>(yn) % 16 == 0) {
    launch_round_tokens_f16(yn, S, D, sc.x16, stream);
    x16 = sc.x16;
  }

  for (int32_t b0 = 0; b0 < n_used; b0 += int32_t(band)) {
    const int32_t nb = std::min<int32_t>(int32_t(band), n_used - b0);
    // A second band may evict the first band's slots: their kernels must be done.
    if (b0 > 0) MP_GPU_CHECK(hipStreamSynchronize(st));
    // Hits first: the slots of every expert now, the misses' bytes still on their way.
    source.acquire_start(layer, sc.used.data() + b0, uint32_t(nb), sc.slots.data(), sc.pending.data(), stream);
    FinishOnUnwind started{source, layer};
    ++stats.acquires;
    // The previous copies out of this layer's pinned memory must be done before it is rewritten.
    MP_GPU_CHECK(hipEventSynchronize(copied));
    bool changed = false;
    for (int32_t i = 0; i < nb; ++i) {
      const int32_t e = sc.used[size_t(b0 + i)];
      if (!sc.slots[size_t(i)])
        throw GpuError(where + " expert " + std::to_string(e) + ": the expert source returned no slot");
      if (mirror[e] != sc.slots[size_t(i)]) {
        mirror[e] = sc.slots[size_t(i)];
        changed = true;
      }
    }
    if (changed) {
      MP_GPU_CHECK(hipMemcpyAsync(table_row, mirror, size_t(E) * sizeof(const std::byte*), hipMemcpyHostToDevice, st));
      ++stats.table_uploads;
    }
    // This path keeps a row of the slots it acquired, not of what the pager holds (an evicted
    // expert's entry stays): a later slot lookup must upload the pager's residency again first.
    if (sc.slot_row[layer] > 0) sc.slot_row[layer] = 0;
    // The band's experts in launch order: those ready now, then the pending ones (each ascending),
    // each expert's pairs in token order behind it.
    int32_t n_ready = 0;
    for (int32_t i = 0; i < nb; ++i)
      if (!sc.pending[size_t(i)]) sc.order[size_t(n_ready++)] = i;
    for (int32_t i = 0, g = n_ready; i < nb; ++i)
      if (sc.pending[size_t(i)]) sc.order[size_t(g++)] = i;
    // The band's pairs (an expert-parallel rank's experts need not be neighbours in the pairs).
    int32_t np = 0;
    for (int32_t i = 0; i < nb; ++i) {
      const int32_t e = sc.used[size_t(b0 + i)];
      np += sc.start[size_t(e + 1)] - sc.start[size_t(e)];
    }
    // Every expert of the layer hit, in one band (nb == n_used): the router's record on the device
    // is the one the host would build (experts ascending, each one's pairs in j order).
    const bool device_record = direct.groups && nb == n_used && n_used == direct.nb && n_ready == nb;
    if (device_record) {
      ++stats.device_records;
    } else {
      int32_t* rec_tokens = staging + 2 * nb + 1;
      int32_t* rec_pairs = rec_tokens + np;
      for (int32_t g = 0, at = 0; g < nb; ++g) {
        const int32_t e = sc.used[size_t(b0 + sc.order[size_t(g)])];
        const int32_t from = sc.start[size_t(e)], n_pairs = sc.start[size_t(e + 1)] - from;
        staging[g] = e;
        staging[nb + g] = at;
        std::copy_n(sc.pair_token.data() + from, n_pairs, rec_tokens + at);
        std::copy_n(sc.pair_dest.data() + from, n_pairs, rec_pairs + at);
        at += n_pairs;
      }
      staging[2 * nb] = np;
      MP_GPU_CHECK(
          hipMemcpyAsync(sc.groups, staging, size_t(2 * nb + 1 + 2 * np) * sizeof(int32_t), hipMemcpyHostToDevice, st));
    }
    MP_GPU_CHECK(hipEventRecord(copied, st));

    bool slots_aligned = true;
    for (int32_t i = 0; i < nb; ++i)
      slots_aligned = slots_aligned && reinterpret_cast<uintptr_t>(sc.slots[size_t(i)]) % 16 == 0;
    ExpertLaunch x{table_row,
                   &layout,
                   up_code,
                   down_code,
                   D,
                   I,
                   sc.groups,
                   nb,
                   np,
                   max_count,
                   n_used,
                   expert_token_tile(S * k, n_used),
                   yn,
                   x16,
                   limit,
                   sc.act,
                   sc.ex_out,
                   lp.gemm.expert_precision,
                   ExpertScaleFault{scale_fault_word(sc.fault), layer},
                   stream};
    plan_expert_launch(x, lp.gemm, slots_aligned);
    if (n_ready > 0) launch_expert_group(x, 0, n_ready);
    // Each pending expert as its bytes land: the stream waits for them on the device, the host
    // only for their reads to be queued, while the GPU computes what was launched before.
    for (int32_t g = n_ready; g < nb; ++g) {
      source.acquire_await(layer, uint32_t(sc.order[size_t(g)]), stream);
      launch_expert_group(x, g, 1);
    }
    if (n_ready < nb) {
      stats.pending_experts += uint64_t(nb - n_ready);
      stats.hits_first += uint64_t(n_ready);
    }
    // Fail closed: a read that failed makes the finish throw, and the forward call with it, so what
    // the kernels computed from that slot is never returned. The layer's last band may leave it to
    // the batch's end (the host queues the next layer instead of waiting for these reads here),
    // except on a rank of an expert-parallel group, whose failure must abort the group's
    // collective in this layer (GpuModel::moe_block).
    source.experts_launched(layer);
    started.armed = false;
    if (sc.defer_finish && ep == nullptr && b0 + nb >= n_used) owe_finish(sc, layer);
    else source.acquire_finish(layer);
    stats.routed_experts += uint64_t(np);
  }
  combine_experts(sc, lp.gemm, S, k, D, out, stream);
}

}  // namespace moepage::ds4::gpu
