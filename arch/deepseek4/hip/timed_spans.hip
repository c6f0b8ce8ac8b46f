#include "deepseek4/hip/timed_spans.hpp"

#include <algorithm>

#include "deepseek4/hip/check.hpp"

namespace moepage::ds4::gpu {

TimedSpans::TimedSpans(uint32_t capacity) : starts_(capacity), ends_(capacity) {}

void TimedSpans::start(uint32_t i, Stream stream) {
  MP_GPU_CHECK(hipEventRecord(static_cast<hipEvent_t>(starts_.at(i)), native(stream)));
}

void TimedSpans::end(uint32_t i, Stream stream) {
  MP_GPU_CHECK(hipEventRecord(static_cast<hipEvent_t>(ends_.at(i)), native(stream)));
  used_ = std::max(used_, i + 1);
}

TimedSpans::Total TimedSpans::collect() {
  Total t;
  for (uint32_t i = 0; i < used_; ++i) {
    float ms = 0.0f;
    MP_GPU_CHECK(
        hipEventElapsedTime(&ms, static_cast<hipEvent_t>(starts_.at(i)), static_cast<hipEvent_t>(ends_.at(i))));
    ++t.spans;
    t.ns += uint64_t(double(ms) * 1e6);
  }
  used_ = 0;
  return t;
}

}  // namespace moepage::ds4::gpu
