// The MoE block's working memory, sized once at load for max_batch tokens (nothing is allocated
// per step). Plain C++ (no HIP header) so the GPU model can own it through a unique_ptr; the
// runtime events are held as opaque pointers and released by the destructor in moe.hip.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "deepseek4/hip/side_stream.hpp"

namespace moepage::ds4::gpu {

// The first non-finite router score of the calls since the last check, written by the router
// kernel on the device (all zero: none). Hash layers never bring their routing to the host, so
// the record travels with the batch's last copy instead of costing a round trip per layer.
struct RouterFault {
  int32_t found = 0;     // 1 once a fault is recorded; later ones are dropped
  int32_t layer = 0;     // the layer whose router saw it
  int32_t position = 0;  // the token's position in the sequence
  int32_t token = 0;     // its id (-1 when the kernel had no ids)
  int32_t expert = 0;    // the expert whose score is not finite
  int32_t biased = 0;    // 1: the score was finite and the bias made it not
  float value = 0;       // the non-finite value
  int32_t unused = 0;
};

struct MoeScratch {
  MoeScratch() = default;
  ~MoeScratch();
  MoeScratch(const MoeScratch&) = delete;
  MoeScratch& operator=(const MoeScratch&) = delete;

  int64_t max_batch = 0;
  uint32_t n_layers = 0, n_experts = 0, top_k = 0;

  // Device memory.
  float* logits = nullptr;             // [S, E] router logits
  int32_t* idx = nullptr;              // [S, k] chosen experts
  float* weights = nullptr;            // [S, k] their weights
  float *h1 = nullptr, *h3 = nullptr;  // [S, I] shared expert
  float* act = nullptr;                // [S*k, I] routed SwiGLU activations, by pair s*k+j
  float* ex_out = nullptr;             // [S*k, D] routed expert outputs, by pair s*k+j
  const std::byte** table = nullptr;   // [layers, E] device slot pointer of each expert
  int32_t* groups = nullptr;           // one band: experts [nb], starts [nb+1], tokens [np], pairs [np]
  RouterFault* fault = nullptr;        // the router's fault record
  int64_t group_ints = 0;              // capacity of one band's group record

  // Pinned host memory (async copies come from pinned memory).
  int32_t* idx_host = nullptr;         // [S, k]
  const std::byte** mirror = nullptr;  // [layers, E] host copy of `table`
  int32_t* staging = nullptr;          // [layers, group_ints]: each layer stages its bands here
  RouterFault* fault_host = nullptr;   // where fetch_router_fault copies the record

  // The sequence position of the batch's first token (set by the model before each batch); the
  // router records positions from it.
  int64_t position0 = 0;

  // Host working arrays of the grouping (sized at load).
  std::vector<int32_t> count, start, used, pair_token, pair_dest;  // [E], [E+1], [E], [S*k], [S*k]
  std::vector<const std::byte*> slots;                             // [E]
  std::vector<uint8_t> pending;  // [E] of a band: 1 when the expert's bytes were still being read
  std::vector<int32_t> order;    // [E] the band's experts in launch order (ready ones first)

  // Runtime events (hipEvent_t): the router's ids reached the host; and per layer, the last
  // async copy out of that layer's pinned mirror row and staging (the host waits on it before
  // rewriting them).
  void* idx_ready = nullptr;
  std::vector<void*> layer_copied;
  // The shared expert runs beside the router (one multiprocessor), the host's wait for the ids and
  // the routed experts' ramp and tail.
  SideStream side;
};

}  // namespace moepage::ds4::gpu
