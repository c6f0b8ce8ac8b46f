// Deferred acquire_finish (ModelOptions::defer_acquire_finish): a paged layer's last band of
// experts is launched, its reads may still be landing, and the host goes on to queue the next
// layer; the finish (wait for the reads, commit the slots, or fail closed) comes once the batch's
// last layer is queued. The pager ABI allows it: between a layer's acquire_start and its finish
// the host may acquire other layers and hint any layer (pager.h, ABI 1.5).
//
// Fail closed still holds: a read that failed throws from finish_owed_acquires, before the batch's
// output is read, so the call fails and nothing computed from that slot is returned.
#pragma once
#include <cstdint>

#include "deepseek4/hip/expert_source.hpp"

namespace moepage::ds4::gpu {

struct MoeScratch;

// `layer`'s started acquire is owed a finish. Every batch settles what it owes before it returns or
// unwinds (GpuModel::run_batch), so no layer is started again while it is owed one.
void owe_finish(MoeScratch& sc, uint32_t layer);
// Finishes every owed acquire in layer order. Every one is finished even when one fails; the first
// failure is then rethrown.
void finish_owed_acquires(MoeScratch& sc, GpuExpertSource& source);
// The same for a batch that is failing already: every owed acquire is finished and its error
// dropped (the batch's own error is the one that travels).
void drop_owed_acquires(MoeScratch& sc, GpuExpertSource& source) noexcept;

// Closes a started acquire when what follows its acquire_start fails before its acquire_finish (a
// launch error, a bad slot, a reply that cannot be sent), so the source is not left with the layer
// started; the first error is the one that travels. Disarm it once the finish is owed or called.
struct FinishOnUnwind {
  GpuExpertSource& source;
  uint32_t layer;
  bool armed = true;
  ~FinishOnUnwind() {
    if (!armed) return;
    try {
      source.acquire_finish(layer);
    } catch (...) {
    }
  }
};

// drop_owed_acquires when it goes out of scope: nothing once finish_owed_acquires ran, every owed
// acquire when the batch is unwinding.
struct DropOwedAcquires {
  MoeScratch& sc;
  GpuExpertSource& source;
  ~DropOwedAcquires() { drop_owed_acquires(sc, source); }
};

}  // namespace moepage::ds4::gpu
