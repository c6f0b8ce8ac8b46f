// The host's side of a decode step whose experts are looked up on the device (slot_table.hpp), as
// the MoE block and the model use it. Plain C++ (no HIP header), for the model's host code.
#pragma once
#include <cstdint>
#include <exception>

#include "deepseek4/forward/moe.hpp"
#include "deepseek4/hip/expert_source.hpp"
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

struct MoeScratch;

// Whether `layer`'s experts may be looked up on the device in this step. The layer's device table
// row is first brought to the source's residency (uploaded on `stream` only where it differs from what
// the device holds); a source without residency for the layer, or a slot the kernels cannot read
// (not 16-byte aligned), keeps the layer on the host path for good.
bool prepare_slot_lookup(MoeScratch& sc, GpuExpertSource& source, uint32_t layer, int64_t E, Stream stream);

// While the device runs the queued layers: each looked-up layer up to `through_layer` in order
// (every one by default), its ids read from the link (the host waits until the device reached
// it); a layer that hit is accounted to the source, one that missed is acquired, its reply (the new
// table entries, then the stamp that releases the stall) queued behind a device-side wait for its
// reads, and the host waits for those reads. Throws (every stall then gives up:
// abandon_slot_stalls) naming the layer when the device found ids the host cannot use, the source
// failed (a read too) or a reply outlasted its deadline.
constexpr uint32_t kAllLayers = UINT32_MAX;
void serve_slot_stalls(MoeScratch& sc, GpuExpertSource& source, MoeStats& stats, Stream stream,
                       uint32_t through_layer = kAllLayers);
// The same for the oldest stalls whose layers the device has already looked up, without waiting
// for the device: for a host between the layers it queues, so a miss's reads start as soon as the
// device knows it rather than once the queue is full.
void serve_arrived_slot_stalls(MoeScratch& sc, GpuExpertSource& source, MoeStats& stats, Stream stream);

// A batch that fails: every queued stall gives up (its layer's misses compute nothing), and every
// layer's device row is read again from the source before its next lookup. Clears the abort once
// a later step finds the stream idle (prepare_slot_lookup).
void abandon_slot_stalls(MoeScratch& sc) noexcept;

// After the batch's synchronize: throws naming how many when a stall of the batch gave up waiting
// for the host (its layer's misses were not computed, so the output must not be returned).
void throw_if_stalls_gave_up(MoeScratch& sc);

// abandon_slot_stalls when it goes out of scope: for the batch, which has served every stall by its
// end unless it is unwinding (the device must not wait for a reply that never comes).
struct AbandonSlotStalls {
  MoeScratch& sc;
  ~AbandonSlotStalls() { abandon_slot_stalls(sc); }
};

// The same only while an exception unwinds: for a call that serves some of the stalls and leaves
// the rest queued for a later one.
class AbandonSlotStallsOnThrow {
 public:
  explicit AbandonSlotStallsOnThrow(MoeScratch& sc) : sc_(sc), exceptions_(std::uncaught_exceptions()) {}
  ~AbandonSlotStallsOnThrow() {
    if (std::uncaught_exceptions() > exceptions_) abandon_slot_stalls(sc_);
  }
  AbandonSlotStallsOnThrow(const AbandonSlotStallsOnThrow&) = delete;
  AbandonSlotStallsOnThrow& operator=(const AbandonSlotStallsOnThrow&) = delete;

 private:
  MoeScratch& sc_;
  int exceptions_;
};

}  // namespace moepage::ds4::gpu
