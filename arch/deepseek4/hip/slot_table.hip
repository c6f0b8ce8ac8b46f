// SlotStalls (slot_table.hpp): the mapped memory, the host's wait and reply, and the stall kernel.
#include "deepseek4/hip/slot_table.hpp"

#include <atomic>
#include <cstring>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch.hpp"

namespace moepage::ds4::gpu {
namespace {

constexpr int32_t kReplyStamp = 0, kReplyStatus = 1;
constexpr int32_t kStatusGo = 0, kStatusAbandon = 1;
// A stall gives up after about this many clock cycles without a reply (tens of seconds): a host
// that stopped answering must not hang the device forever. The host counts these as a failure.
constexpr long long kStallTimeoutCycles = 100'000'000'000LL;

__device__ inline void pause_briefly() {
#if defined(MOEPAGE_GPU_NVIDIA)
  __nanosleep(500);
#else
  __builtin_amdgcn_s_sleep(8);
#endif
}

// One thread. Nothing missed (gate[2] == gate[3]): returns at once. Else it waits for the reply's
// stamp (or the abort word, or the time-out). The host wrote the layer's table row with a copy it
// saw complete before it wrote the stamp, so the misses' launch after this kernel reads the new
// slots; on anything but a go it empties the misses' range so their launch computes nothing.
__global__ void slot_stall_kernel(int32_t* gate, const volatile int32_t* reply, uint32_t stamp,
                                  const volatile int32_t* abort_word, int32_t* timeouts) {
  kernel_entry();
  if (gate[2] == gate[3]) return;
  const long long t0 = clock64();
  bool go = false;
  for (;;) {
    if (uint32_t(reply[kReplyStamp]) == stamp) {
      __threadfence_system();
      go = reply[kReplyStatus] == kStatusGo;
      break;
    }
    if (*abort_word != 0) break;
    if (clock64() - t0 > kStallTimeoutCycles) {
      atomicAdd(timeouts, 1);
      break;
    }
    pause_briefly();
  }
  if (!go) gate[3] = gate[2];
}

}  // namespace

SlotStalls::SlotStalls(uint32_t layers, uint32_t k, uint32_t n_experts) : layers_(layers), k_(k), experts_(n_experts) {
  const size_t bytes = (words_at() + 2) * sizeof(int32_t);
  void* p = nullptr;
  MP_GPU_CHECK(hipHostMalloc(&p, bytes, MP_HOST_ALLOC_SHARED));
  host_ = static_cast<int32_t*>(p);
  std::memset(host_, 0, bytes);
  void* d = nullptr;
  if (hipError_t e = hipHostGetDevicePointer(&d, p, 0); e != hipSuccess) {
    (void)hipHostFree(p);
    throw GpuError(std::string("slot stalls: hipHostGetDevicePointer: ") + hipGetErrorString(e));
  }
  device_ = static_cast<int32_t*>(d);
  hipStream_t s = nullptr;
  if (hipError_t e = hipStreamCreateWithFlags(&s, hipStreamNonBlocking); e != hipSuccess) {
    (void)hipHostFree(p);
    throw GpuError(std::string("slot stalls: hipStreamCreateWithFlags: ") + hipGetErrorString(e));
  }
  reply_stream_ = s;
}

SlotStalls::~SlotStalls() {
  if (reply_stream_) (void)hipStreamDestroy(static_cast<hipStream_t>(reply_stream_));
  if (host_) (void)hipHostFree(host_);
}

uint32_t SlotStalls::next_stamp() {
  if (++stamp_ == 0) stamp_ = 1;
  return stamp_;
}

int32_t* SlotStalls::row_device(uint32_t layer) const {
  if (layer >= layers_)
    throw GpuError("slot stalls: layer " + std::to_string(layer) + " of " + std::to_string(layers_));
  return device_ + size_t(layer) * (k_ + 2);
}

int32_t SlotStalls::await_row(uint32_t layer, uint32_t stamp, Stream stream, int32_t* ids_out) const {
  const volatile int32_t* row = host_ + size_t(layer) * (k_ + 2);
  // Spin on the stamp; now and then ask whether the stream has finished, since a router that ran
  // and left no stamp (or a failed stream) would otherwise be waited for forever.
  for (uint64_t polls = 1; uint32_t(row[k_ + 1]) != stamp; ++polls) {
    if (polls % 4096 != 0) continue;
    const hipError_t e = hipStreamQuery(native(stream));
    if (e == hipErrorNotReady) continue;
    MP_GPU_CHECK(e);
    if (uint32_t(row[k_ + 1]) == stamp) break;
    throw GpuError("gpu moe layer " + std::to_string(layer) +
                   ": the router finished but its slot lookup never reached the host's mapped memory (stamp " +
                   std::to_string(stamp) + ", found " + std::to_string(uint32_t(row[k_ + 1])) + ")");
  }
  std::atomic_thread_fence(std::memory_order_acquire);  // the ids and misses were written first
  for (uint32_t j = 0; j < k_; ++j) ids_out[j] = row[j];
  return row[k_];
}

void SlotStalls::release(uint32_t layer, uint32_t stamp, const std::byte** table_row, const std::byte* const* row) {
  if (layer >= layers_) throw GpuError("slot stalls: a reply for layer " + std::to_string(layer));
  // The row goes to the device on a stream of its own (the compute stream is held by the stall),
  // and only once the copy is complete does the stamp let the stall go.
  hipStream_t s = static_cast<hipStream_t>(reply_stream_);
  MP_GPU_CHECK(hipMemcpyAsync(table_row, row, size_t(experts_) * sizeof(const std::byte*), hipMemcpyHostToDevice, s));
  MP_GPU_CHECK(hipStreamSynchronize(s));
  int32_t* reply = host_ + replies_at() + size_t(layer) * kReplyInts;
  reply[kReplyStatus] = kStatusGo;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  reinterpret_cast<volatile int32_t*>(reply)[kReplyStamp] = int32_t(stamp);
}

void SlotStalls::abort_all() {
  std::atomic_thread_fence(std::memory_order_release);
  reinterpret_cast<volatile int32_t*>(host_)[words_at()] = 1;
}

bool SlotStalls::aborted() const { return reinterpret_cast<const volatile int32_t*>(host_)[words_at()] != 0; }

void SlotStalls::clear_abort() { reinterpret_cast<volatile int32_t*>(host_)[words_at()] = 0; }

uint32_t SlotStalls::timeouts() const {
  return uint32_t(reinterpret_cast<const volatile int32_t*>(host_)[words_at() + 1]);
}

void SlotStalls::launch_stall(uint32_t layer, uint32_t stamp, int32_t* gate, Stream stream) const {
  if (layer >= layers_)
    throw GpuError("slot stalls: layer " + std::to_string(layer) + " of " + std::to_string(layers_));
  const int32_t* reply = device_ + replies_at() + size_t(layer) * kReplyInts;
  launch("gpu slot stall", slot_stall_kernel, 1, 1, 0, native(stream), gate, reply, stamp, device_ + words_at(),
         device_ + words_at() + 1);
}

}  // namespace moepage::ds4::gpu
