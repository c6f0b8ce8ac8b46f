// The router's launch as the MoE block uses it (moe.hip): route() that may also leave one
// token's group record on the device, for a decode step routed there. For .hip files only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "deepseek4/forward/moe.hpp"
#include "deepseek4/hip/device_params.hpp"
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

struct RouterFault;

constexpr int32_t kMaxDeviceTopK = 32;  // experts per token the device-built record takes

// Where the router of a decode step routed on the device (moe(), slots that never move) leaves the
// token's group record: groups as moe_band.hpp lays it out for the nb distinct experts the host
// expects, keep [k + 1]. Null groups: the ids go to the host instead.
// host_ids (any call of one token, with or without groups): a row of MappedIds that also
// receives the k ids, then `stamp`.
// lookup (with groups; ModelOptions::slot_table, slot_table.hpp): the layer's device slot table,
// an expert's slot or null where it must be acquired first. The record then lists the experts
// found there (ascending), then the others (ascending), and gate[0..4) = {0, hits, hits, nb}: the
// groups of the launch over the hits, then of the one over the misses ({0, 0, 0, 0} for ids the
// host did not expect: nothing launches and the host fails the call). host_ids' row is then
// k + 2 long: the ids, the count of misses, the stamp.
struct TokenRecord {
  int32_t* groups = nullptr;
  int32_t nb = 0;
  int32_t* keep = nullptr;
  int32_t* host_ids = nullptr;
  uint32_t stamp = 0;
  const std::byte* const* lookup = nullptr;
  int32_t* gate = nullptr;
};

// route() (moe.hpp), and with record.groups set, the group record of its one token (S = 1).
void launch_route(const GpuLayerParams& lp, const Config& c, const int32_t* tokens, int64_t S, const float* logits,
                  int32_t* idx, float* weights, Stream stream, RouterFault* fault, uint32_t layer, int64_t p0,
                  const int32_t* forced, const TokenRecord& record);

// One token (decode): the router's logits (x times lp.gate, written to `logits`) and its routing
// as launch_route does it, in one launch whose last block to finish routes (`ticket`: a zeroed
// device counter, left at zero again). Returns false, having launched nothing, where the
// single-token product does not take the gate (the caller runs matmul, then launch_route).
bool gate_and_route(const GpuLayerParams& lp, const Config& c, const int32_t* tokens, const float* x, float* logits,
                    int32_t* idx, float* weights, uint32_t* ticket, Stream stream, RouterFault* fault, uint32_t layer,
                    int64_t p0, const int32_t* forced, const TokenRecord& record);

}  // namespace moepage::ds4::gpu
