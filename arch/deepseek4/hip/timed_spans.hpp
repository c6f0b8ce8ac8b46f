// Device time of a few spans of work on a stream, read back without a synchronize of its own: a
// span's start and end are events recorded on the stream, and their elapsed time is read once the
// caller's own synchronize has passed them. What an expert-parallel rank's all-reduces cost on the
// device (the wait for the other GPUs included) is measured this way.
#pragma once
#include <cstdint>

#include "deepseek4/hip/event_set.hpp"
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

class TimedSpans {
 public:
  explicit TimedSpans(uint32_t capacity);  // throws GpuError when the runtime cannot make events

  // Span i (< capacity) starts, or ends, here on `stream`.
  void start(uint32_t i, Stream stream);
  void end(uint32_t i, Stream stream);
  // After a synchronize that followed every span recorded since the last collect(): their summed
  // device time in nanoseconds, and how many there were. Forgets them.
  struct Total {
    uint64_t spans = 0;
    uint64_t ns = 0;
  };
  // A span recorded again before a collect() counts once, with its latest times.
  Total collect();

 private:
  EventSet starts_, ends_;
  uint32_t used_ = 0;  // spans 0 .. used_ - 1 have both events recorded
};

}  // namespace moepage::ds4::gpu
