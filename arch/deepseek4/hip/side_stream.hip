#include "deepseek4/hip/side_stream.hpp"

#include "deepseek4/hip/check.hpp"

namespace moepage::ds4::gpu {

SideStream::SideStream(bool urgent) {
  hipStream_t s = nullptr;
  int least = 0, greatest = 0;
  if (urgent) MP_GPU_CHECK(hipDeviceGetStreamPriorityRange(&least, &greatest));
  MP_GPU_CHECK(hipStreamCreateWithPriority(&s, hipStreamNonBlocking, urgent ? greatest : least));
  stream_ = s;
  hipEvent_t e = nullptr;
  MP_GPU_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming));
  forked_ = e;
  MP_GPU_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming));
  joined_ = e;
}

SideStream::~SideStream() {
  // Kernels queued on the side stream may still read or write the model's buffers.
  if (stream_) {
    (void)hipStreamSynchronize(static_cast<hipStream_t>(stream_));
    (void)hipStreamDestroy(static_cast<hipStream_t>(stream_));
  }
  for (void* e : {forked_, joined_})
    if (e) (void)hipEventDestroy(static_cast<hipEvent_t>(e));
}

Stream SideStream::fork(Stream main) {
  MP_GPU_CHECK(hipEventRecord(static_cast<hipEvent_t>(forked_), native(main)));
  MP_GPU_CHECK(hipStreamWaitEvent(static_cast<hipStream_t>(stream_), static_cast<hipEvent_t>(forked_), 0));
  return stream_;
}

void SideStream::join(Stream main) {
  MP_GPU_CHECK(hipEventRecord(static_cast<hipEvent_t>(joined_), static_cast<hipStream_t>(stream_)));
  MP_GPU_CHECK(hipStreamWaitEvent(native(main), static_cast<hipEvent_t>(joined_), 0));
}

}  // namespace moepage::ds4::gpu
