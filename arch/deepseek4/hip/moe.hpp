// The MoE block on the GPU, the twin of forward/moe.hpp. Router logits, scores and top-k run on
// the device; the k ids per token come back to the host (one small copy; none at all on
// hash-routed layers, whose experts the host knows from the token ids) for the pager. Routed
// experts then run through the layer's device pointer table ([E] slot pointers per layer,
// uploaded only when an entry changed), the shared expert alongside, and a fixed-order combine.
#pragma once
#include <cstdint>
#include <memory>

#include "deepseek4/forward/expert_parallel.hpp"
#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/forward/moe.hpp"
#include "deepseek4/hip/device_params.hpp"
#include "deepseek4/hip/expert_source.hpp"

namespace moepage::ds4::gpu {

struct MoeScratch;  // defined in moe_scratch.hpp (owned by the MoE block)

std::unique_ptr<MoeScratch> allocate_moe_scratch(const Config& c, int64_t max_batch, DeviceArena& arena,
                                                 DeviceArena& pinned);

// out [S, D] = shared expert + weighted routed experts of yn [S, D]. tokens_host / tokens (device)
// are the batch's ids (hash routing). Counts acquires and routed expert uses into stats and
// pointer-table uploads into *table_uploads. forced_host / forced_device: [S, k] experts to use
// instead of the router's choice (ForcedRouting; the same ids in host and device memory), or null.
// ep: one rank of an expert-parallel group, or null: `out` then holds this rank's part only (the
// shared expert on rank 0, the chosen experts the rank owns), for the caller's all-reduce; the
// source is asked for owned experts only.
void moe(const GpuLayerParams& lp, const Config& c, uint32_t layer, const int32_t* tokens_host, const int32_t* tokens,
         int64_t S, const float* yn, GpuExpertSource& source, const ExpertLayout& layout, MoeScratch& sc, float* out,
         MoeStats& stats, Stream stream, const int32_t* forced_host = nullptr, const int32_t* forced_device = nullptr,
         const ExpertParallel* ep = nullptr);

// Whether a prompt layer of these experts, one of which serves max_tokens tokens, takes the
// streamed fp16 tiles (moe_mma_stream.hip) under lp's policy: FP4 experts of suitable shape,
// ExpertPrecision::Fp16, GemmPolicy::expert_stream, a device with the matrix cores.
bool moe_streams_experts(const GpuLayerParams& lp, const ExpertLayout& layout, const Config& c, int64_t max_tokens);
// Whether a decode step's experts of this layer (each serving one token, slots aligned) take the
// single-token fp16 products (mma_gemv_fp4.hpp) under lp's policy: GemmPolicy::single_token,
// ExpertPrecision::Fp16, FP4 experts of suitable shape, a device with the matrix cores.
bool moe_single_token_fp16(const GpuLayerParams& lp, const ExpertLayout& layout, const Config& c);

// Decode routed on the device (moe(), for a source whose slots never move): after the batch's
// layers, fetch_device_routing queues the copy of their ids to the host; after the stream's next
// synchronize, account_device_routing reports each such layer's distinct experts to the source
// (GpuExpertSource::account), in layer order, and throws naming the layer if the device found ids
// the host did not expect. clear_device_routing forgets a failed batch's marks.
void fetch_device_routing(MoeScratch& sc, Stream stream);
void account_device_routing(MoeScratch& sc, GpuExpertSource& source);
void clear_device_routing(MoeScratch& sc);

struct RouterFault;  // defined in moe_scratch.hpp

// The routing of S tokens on the device (cpu route_token for each): scores, top-k (hash layers:
// tid2eid), weights normalised and scaled. idx [S, k] int32, weights [S, k]. A non-finite score
// (or biased score) is recorded in *fault (device memory; may be null) with the layer and the
// position p0 + s; the routing itself still completes, as the CPU's top-k would order it. forced:
// [S, k] device ids to take instead of the choice (weights from the scores as always), or null.
// Exposed for the kernel tests.
void route(const GpuLayerParams& lp, const Config& c, const int32_t* tokens, int64_t S, const float* logits,
           int32_t* idx, float* weights, Stream stream, RouterFault* fault = nullptr, uint32_t layer = 0,
           int64_t p0 = 0, const int32_t* forced = nullptr);

// Queues the copy of the router's fault record to the host; it is read after the stream's next
// synchronize by throw_if_router_fault.
void fetch_router_fault(MoeScratch& sc, Stream stream);

// After a synchronize that followed fetch_router_fault: throws std::runtime_error naming the
// layer, the token's position and id, the expert and the value, as the CPU router does, if a
// score was not finite. The record is cleared first, so a reset model is usable again.
void throw_if_router_fault(MoeScratch& sc, Stream stream);

}  // namespace moepage::ds4::gpu
