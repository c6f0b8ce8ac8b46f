#include "deepseek4/hip/event_set.hpp"

#include "deepseek4/hip/check.hpp"

namespace moepage::ds4::gpu {

EventSet::EventSet(uint32_t count) : events_(count, nullptr) {
  try {
    for (void*& e : events_) {
      hipEvent_t made = nullptr;
      MP_GPU_CHECK(hipEventCreate(&made));
      e = made;
    }
  } catch (...) {
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

EventSet::~EventSet() { release(); }

void EventSet::record(uint32_t i, Stream s) const {
  MP_GPU_CHECK(hipEventRecord(static_cast<hipEvent_t>(at(i)), native(s)));
}

void EventSet::host_wait(uint32_t i) const { MP_GPU_CHECK(hipEventSynchronize(static_cast<hipEvent_t>(at(i)))); }

void EventSet::device_wait(uint32_t i, Stream s) const {
  MP_GPU_CHECK(hipStreamWaitEvent(native(s), static_cast<hipEvent_t>(at(i)), 0));
}

void EventSet::release() noexcept {
  for (void*& e : events_) {
    if (e) (void)hipEventDestroy(static_cast<hipEvent_t>(e));
    e = nullptr;
  }
}

}  // namespace moepage::ds4::gpu
