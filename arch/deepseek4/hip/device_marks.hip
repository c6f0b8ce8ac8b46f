#include "deepseek4/hip/device_marks.hpp"

#include <string>

#include "deepseek4/hip/check.hpp"

namespace moepage::ds4::gpu {

BatchMarks::BatchMarks(uint32_t capacity) : events_(capacity) { host_.reserve(capacity); }

void BatchMarks::start(Stream stream) {
  used_ = 0;
  host_.start();
  mark(stream);
}

void BatchMarks::mark(Stream stream) {
  if (used_ == events_.size())
    throw GpuError("batch marks: more than " + std::to_string(events_.size()) + " marks in one batch");
  MP_GPU_CHECK(hipEventRecord(static_cast<hipEvent_t>(events_.at(used_++)), native(stream)));
  host_.mark();
}

BatchTimeline BatchMarks::timeline(uint32_t tokens) const {
  std::vector<double> device_ms(used_, 0.0);
  for (uint32_t i = 1; i < used_; ++i) {
    float ms = 0.0f;
    MP_GPU_CHECK(
        hipEventElapsedTime(&ms, static_cast<hipEvent_t>(events_.at(0)), static_cast<hipEvent_t>(events_.at(i))));
    device_ms[i] = double(ms);
  }
  return timeline_from_marks(tokens, device_ms, host_.at_ms().back(), host_.since_start_ms());
}

}  // namespace moepage::ds4::gpu
