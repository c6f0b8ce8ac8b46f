// A fixed set of events made at construction and destroyed with the set: what the device timers
// (timed_spans.hpp, device_marks.hpp) record on a stream without allocating while they time.
#pragma once
#include <cstdint>
#include <vector>

namespace moepage::ds4::gpu {

class EventSet {
 public:
  explicit EventSet(uint32_t count);  // throws GpuError when the runtime cannot make events
  ~EventSet();
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;

  uint32_t size() const { return uint32_t(events_.size()); }
  void* at(uint32_t i) const { return events_.at(i); }  // a hipEvent_t

 private:
  void release() noexcept;
  std::vector<void*> events_;
};

}  // namespace moepage::ds4::gpu
