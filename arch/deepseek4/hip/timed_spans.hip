#include "deepseek4/hip/timed_spans.hpp"

#include <algorithm>

#include "deepseek4/hip/check.hpp"

namespace moepage::ds4::gpu {

TimedSpans::TimedSpans(uint32_t capacity) : starts_(capacity, nullptr), ends_(capacity, nullptr) {
  for (uint32_t i = 0; i < capacity; ++i) {
    hipEvent_t a = nullptr, b = nullptr;
    MP_GPU_CHECK(hipEventCreate(&a));
    starts_[i] = a;
    MP_GPU_CHECK(hipEventCreate(&b));
    ends_[i] = b;
  }
}

TimedSpans::~TimedSpans() {
  for (void* e : starts_)
    if (e) (void)hipEventDestroy(static_cast<hipEvent_t>(e));
  for (void* e : ends_)
    if (e) (void)hipEventDestroy(static_cast<hipEvent_t>(e));
}

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
    MP_GPU_CHECK(hipEventElapsedTime(&ms, static_cast<hipEvent_t>(starts_[i]), static_cast<hipEvent_t>(ends_[i])));
    ++t.spans;
    t.ns += uint64_t(double(ms) * 1e6);
  }
  used_ = 0;
  return t;
}

}  // namespace moepage::ds4::gpu
