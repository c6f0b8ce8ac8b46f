#include "stream_gate.hpp"

#include <stdexcept>
#include <string>
#include <thread>

#include "gpu/hip_compat.hpp"

namespace moepage::test {

void StreamGate::wait_until_open(void* self) noexcept {
  // Runs on the runtime's callback thread; it may not call the runtime, only wait.
  auto* gate = static_cast<StreamGate*>(self);
  while (!gate->open_.load(std::memory_order_acquire)) std::this_thread::yield();
}

void StreamGate::close_on(mp_stream stream) {
  const hipError_t e = hipLaunchHostFunc(reinterpret_cast<hipStream_t>(stream), &StreamGate::wait_until_open, this);
  if (e != hipSuccess)
    throw std::runtime_error(std::string("hipLaunchHostFunc (stream gate): ") + hipGetErrorString(e));
}

bool runtime_error_clear() noexcept { return hipPeekAtLastError() == hipSuccess; }

}  // namespace moepage::test
