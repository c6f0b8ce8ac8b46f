// A fixed set of events made at construction and destroyed with the set: what the device timers
// (timed_spans.hpp, device_marks.hpp) record on a stream without allocating while they time, and
// the event a model waits on for its greedy pick while the next step's front runs (gpu_model.hpp).
#pragma once
#include <cstdint>
#include <vector>

#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

class EventSet {
 public:
  explicit EventSet(uint32_t count);  // throws GpuError when the runtime cannot make events
  ~EventSet();
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;

  uint32_t size() const { return uint32_t(events_.size()); }
  void* at(uint32_t i) const { return events_.at(i); }  // a hipEvent_t
  // Event i at this point of stream `s`; the host waiting until the stream has passed it (work
  // queued on the stream after the record may still run).
  void record(uint32_t i, Stream s) const;
  void host_wait(uint32_t i) const;
  // Stream `s` waiting on the device until event i has passed (the host does not wait).
  void device_wait(uint32_t i, Stream s) const;

 private:
  void release() noexcept;
  std::vector<void*> events_;
};

}  // namespace moepage::ds4::gpu
