#include "deepseek4/hip/moe_finish.hpp"

#include <exception>

#include "deepseek4/hip/moe_scratch.hpp"

namespace moepage::ds4::gpu {

void owe_finish(MoeScratch& sc, uint32_t layer) {
  if (sc.owes_finish[layer]) return;
  sc.owes_finish[layer] = 1;
  ++sc.owed;
}

namespace {

// Finishes `layer`'s acquire if it is owed one (its errors travel).
void finish_owed_acquire(MoeScratch& sc, GpuExpertSource& source, uint32_t layer) {
  if (!sc.owes_finish[layer]) return;
  // Settled before the call: a finish that throws has still closed the layer's acquire.
  sc.owes_finish[layer] = 0;
  --sc.owed;
  source.acquire_finish(layer);
}

}  // namespace

void finish_owed_acquires(MoeScratch& sc, GpuExpertSource& source) {
  std::exception_ptr first;
  for (uint32_t layer = 0; sc.owed > 0 && layer < sc.owes_finish.size(); ++layer) {
    try {
      finish_owed_acquire(sc, source, layer);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void drop_owed_acquires(MoeScratch& sc, GpuExpertSource& source) noexcept {
  for (uint32_t layer = 0; sc.owed > 0 && layer < sc.owes_finish.size(); ++layer) {
    try {
      finish_owed_acquire(sc, source, layer);
    } catch (...) {
    }
  }
}

}  // namespace moepage::ds4::gpu
