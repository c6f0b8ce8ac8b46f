// The MoE block's working memory, sized once at load for max_batch tokens (nothing is allocated
// per step). Plain C++ (no HIP header) so the GPU model can own it through a unique_ptr; the
// runtime events are held as opaque pointers and released by the destructor in moe.hip.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "deepseek4/forward/prompt_shared.hpp"
#include "deepseek4/hip/mapped_ids.hpp"
#include "deepseek4/hip/side_stream.hpp"
#include "deepseek4/hip/slot_table.hpp"

namespace moepage::ds4::gpu {

// The first non-finite router score of the calls since the last check, written by the router
// kernel on the device (all zero: none). Hash layers never bring their routing to the host, so
// the record travels with the batch's last copy instead of costing a round trip per layer.
//
// "First" is the CPU router's order: the earliest launch (layer after layer, batch after batch),
// inside it the lowest token of the batch, then the lowest expert. Launches run one after another
// on the stream, so the first launch to claim `launch` keeps it; inside a launch every faulting
// thread offers its key and atomicMax keeps the lowest (token, expert), whichever block ran first.
struct RouterFault {
  unsigned long long launch = 0;  // (batch position << 16) | (layer + 1) of the claiming launch
  unsigned long long key = 0;     // router_fault_key(); 0: none
  // Not the router's: the first FP4 block scale the routed experts' fp16 tiles could not hold
  // (moe_mma.hpp, ExpertScaleFault), checked with the router's record. 0: none.
  unsigned long long scale = 0;
};

// The key's layout, high bits first: ~token-of-batch (20 bits) and ~expert (16): the lowest pair
// gives the highest key; then biased (1), the value's class (2: NaN, +Inf, -Inf) and token id + 1
// (25 bits; 0 when the kernel had no ids or the id does not fit).
namespace router_fault {
inline constexpr int kTokenBits = 25, kClassShift = 25, kBiasedShift = 27, kExpertShift = 28, kBatchShift = 44;
inline constexpr unsigned long long kTokenMask = (1ull << kTokenBits) - 1;
}  // namespace router_fault

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
  float* act = nullptr;                // [S*k, I] routed SwiGLU activations, by pair s*k+j (the
                                       // streamed expert tiles keep them as fp16 in k order)
  uint16_t* x16 = nullptr;             // [S, D] yn rounded to fp16 for the streamed expert tiles
  float* ex_out = nullptr;             // [S*k, D] routed expert outputs, by pair s*k+j
  const std::byte** table = nullptr;   // [layers, E] device slot pointer of each expert
  int32_t* groups = nullptr;           // one band: experts [nb], starts [nb+1], tokens [np], pairs [np]
  RouterFault* fault = nullptr;        // the router's fault record
  uint32_t* route_ticket = nullptr;    // gate_and_route's block counter (zero between launches)
  int64_t group_ints = 0;              // capacity of one band's group record

  // Pinned host memory (async copies come from pinned memory).
  int32_t* idx_host = nullptr;         // [S, k]
  const std::byte** mirror = nullptr;  // [layers, E] host copy of `table`
  int32_t* staging = nullptr;          // [layers, group_ints]: each layer stages its bands here
  RouterFault* fault_host = nullptr;   // where fetch_router_fault copies the record

  // Routing on the device (decode with slots that never move, moe.hip): set by the model before
  // each batch when this batch may take it (one token, and the batch waits for its output, so the
  // ids can be reported to the pager once it is done).
  bool device_routing = false;
  // Device [layers, k + 1]: each layer's ids, then 1 if its record was not the expected one; and
  // its pinned copy, read after the batch's synchronize.
  int32_t* routed_ids = nullptr;
  int32_t* routed_ids_host = nullptr;
  std::vector<uint8_t> routed_on_device;  // [layers]: this batch routed the layer on the device
  std::vector<int8_t> fixed_table;        // [layers]: 0 not asked yet, 1 slots fixed and uploaded, -1 not fixed

  // ModelOptions::direct_hits, made by the model at construction (null: off): where a paged decode
  // step's scored routers leave the token's ids for the host.
  std::unique_ptr<MappedIds> mapped_ids;

  // ModelOptions::slot_table, made by the model at construction (null: off): the link to the host
  // (slot_table.hpp); set by the model before each batch when this batch may take it (one token
  // whose output the call waits for, no expert-parallel group, a source that allows it).
  std::unique_ptr<SlotStalls> slot_stalls;
  bool slot_lookup = false;
  int32_t* slot_gate = nullptr;           // device [4]: the router's {0, hits, hits, nb}
  std::vector<int8_t> slot_row;           // [layers]: 1 the device row is the pager's residency, 0 unknown, -1 never
  std::vector<uint64_t> slot_generation;  // [layers]: the residency generation the row holds
  struct QueuedStall {
    uint32_t layer = 0, stamp = 0;
  };
  std::vector<QueuedStall> stalls_queued;   // the batch's lookups in layer order (capacity: layers)
  std::vector<const std::byte*> residency;  // [E] scratch of residency()
  double slowest_reply_ms = 0;              // the batch's longest acquire and reply of a missed layer

  // ModelOptions::defer_acquire_finish, set by the model at construction: a layer's last band
  // leaves its acquire to finish_owed_acquires (moe_finish.hpp) at the batch's end. owes_finish
  // [layers]: 1 while the layer's acquire is started and not finished; owed: how many.
  bool defer_finish = false;
  std::vector<uint8_t> owes_finish;
  uint32_t owed = 0;

  // The sequence position of the batch's first token (set by the model before each batch); the
  // router records positions from it.
  int64_t position0 = 0;

  // Where a prompt batch's and a decode step's shared expert run (ModelOptions::prompt_shared,
  // ModelOptions::decode_shared).
  PromptShared prompt_shared = PromptShared::Auto;
  PromptShared decode_shared = PromptShared::Beside;

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
  // Another side stream the combine joins beside the shared expert's (null: none): GpuModel hands it
  // the Sinkhorn of the MoE block's own mHC site. The combine follows an event wait anyway; the next
  // site, which would otherwise wait for the Sinkhorn, keeps its overlapped launch (2-4 us). moe()
  // joins it on every normal return (at the combine, or at once for an empty batch).
  SideStream* combine_joins_too = nullptr;
  // PromptShared::Urgent only (the model makes it): a prompt batch's or a decode step's shared
  // expert, on a stream of the greatest priority.
  std::optional<SideStream> urgent_side;
};

}  // namespace moepage::ds4::gpu
