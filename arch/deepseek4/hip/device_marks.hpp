// The marks of a batch timeline (forward/batch_timeline.hpp) on a stream: each an event, beside
// the host's clock when it was queued, read back after the caller's own synchronize. Events are
// made at construction, so marking allocates nothing.
#pragma once
#include <cstdint>

#include "deepseek4/forward/batch_timeline.hpp"
#include "deepseek4/hip/event_set.hpp"
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

class BatchMarks {
 public:
  explicit BatchMarks(uint32_t capacity);  // throws GpuError when the runtime cannot make events

  // Forgets the previous batch's marks and marks this one's start.
  void start(Stream stream);
  // The next mark, here on `stream`; past the capacity, throws GpuError.
  void mark(Stream stream);
  // After a synchronize past every mark: the batch's timeline (the last mark is its end).
  BatchTimeline timeline(uint32_t tokens) const;

 private:
  EventSet events_;
  uint32_t used_ = 0;
  HostMarks host_;
};

}  // namespace moepage::ds4::gpu
