// SlotStalls (slot_table.hpp): the rows and words, the host's wait and reply, and the stall kernel.
#include "deepseek4/hip/slot_table.hpp"

#include <atomic>
#include <cstring>
#include <string>
#include <utility>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch.hpp"

namespace moepage::ds4::gpu {
namespace {

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

// How often (in polls of its device word) a stall also reads the host's abort word, which lives in
// mapped host memory: a read across the bus costs about a microsecond.
constexpr uint32_t kHostAbortEvery = 64;

// One thread. Nothing missed (gate[2] == gate[3]): returns at once. Else it waits until its word
// (device memory, written by the host's copy) carries its stamp, or an abort word is set (the
// device one by a copy, the host one by a plain store, which needs no queue), or the time-out
// passes. The host copied the layer's table row up before the stamp, so the misses' launch after
// this kernel reads the new slots; on anything but the stamp it empties the misses' range so their
// launch computes nothing.
__global__ void slot_stall_kernel(int32_t* gate, const volatile int32_t* word, uint32_t stamp,
                                  const volatile int32_t* abort_word, const volatile int32_t* host_abort,
                                  volatile int32_t* timeouts, uint32_t layer) {
  kernel_entry();
  if (gate[2] == gate[3]) return;
  const long long t0 = clock64();
  for (uint32_t polls = 0;; ++polls) {
    if (uint32_t(*word) == stamp) return;
    if (*abort_word != 0) break;
    if (polls % kHostAbortEvery == 0 && *host_abort != 0) break;
    if (clock64() - t0 > kStallTimeoutCycles) {
      // What the host's error names: this layer, the stamp it waited for and what its word held.
      timeouts[1] = int32_t(layer);
      timeouts[2] = int32_t(stamp);
      timeouts[3] = *word;
      __threadfence_system();
      *timeouts = *timeouts + 1;  // one thread of one stall at a time: the stream orders them
      break;
    }
    pause_briefly();
  }
  gate[3] = gate[2];
}

}  // namespace

SlotStalls::SlotStalls(uint32_t layers, uint32_t k, uint32_t n_experts, std::chrono::milliseconds reply_timeout)
    : layers_(layers), k_(k), experts_(n_experts), replied_(layers, 0), reply_timeout_(reply_timeout) {
  try {
    const size_t row_bytes = (record_at() + kTimeoutInts + 1) * sizeof(int32_t);
    void* p = nullptr;
    MP_GPU_CHECK(hipHostMalloc(&p, row_bytes, MP_HOST_ALLOC_SHARED));
    rows_host_ = static_cast<int32_t*>(p);
    std::memset(rows_host_, 0, row_bytes);
    void* d = nullptr;
    MP_GPU_CHECK(hipHostGetDevicePointer(&d, p, 0));
    rows_device_ = static_cast<int32_t*>(d);
    const size_t word_bytes = (size_t(layers) + 1) * sizeof(int32_t);
    MP_GPU_CHECK(hipMalloc(&d, word_bytes));
    words_ = static_cast<int32_t*>(d);
    MP_GPU_CHECK(hipMemset(words_, 0, word_bytes));
    MP_GPU_CHECK(hipHostMalloc(&p, word_bytes, hipHostMallocDefault));
    staging_ = static_cast<int32_t*>(p);
    std::memset(staging_, 0, word_bytes);
    hipStream_t s = nullptr;
    MP_GPU_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    reply_stream_ = s;
    MP_GPU_CHECK(hipDeviceSynchronize());  // the words' zero fill ran on the legacy stream
    if (reply_timeout.count() > 0)
      watch_ = std::make_unique<cpu::DeadlineWatch>([this] { abort_through_host_memory(); });
  } catch (...) {
    release_memory();  // a constructor that throws runs no destructor
    throw;
  }
}

SlotStalls::~SlotStalls() {
  watch_.reset();  // its thread first: it may store into the memory freed below
  release_memory();
}

void SlotStalls::release_memory() noexcept {
  if (reply_stream_) (void)hipStreamDestroy(static_cast<hipStream_t>(reply_stream_));
  if (staging_) (void)hipHostFree(staging_);
  if (words_) (void)hipFree(words_);
  if (rows_host_) (void)hipHostFree(rows_host_);
  reply_stream_ = nullptr;
  staging_ = words_ = rows_host_ = nullptr;
}

uint32_t SlotStalls::next_stamp() {
  if (++stamp_ == 0) stamp_ = 1;
  return stamp_;
}

int32_t* SlotStalls::row_device(uint32_t layer) const {
  if (layer >= layers_)
    throw GpuError("slot stalls: layer " + std::to_string(layer) + " of " + std::to_string(layers_));
  return rows_device_ + row_at(layer);
}

int32_t SlotStalls::await_row(uint32_t layer, uint32_t stamp, Stream stream, int32_t* ids_out) const {
  const volatile int32_t* row = row_host(layer);
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

bool SlotStalls::row_arrived(uint32_t layer, uint32_t stamp) const {
  return uint32_t(row_host(layer)[k_ + 1]) == stamp;
}

// A layer's staging word is rewritten only by its next reply, after the caller's event showed this
// copy done (release's contract); the abort word's, only by write_word, which waits.
void SlotStalls::queue_word(uint32_t index, int32_t value) {
  hipStream_t s = static_cast<hipStream_t>(reply_stream_);
  staging_[index] = value;
  MP_GPU_CHECK(hipMemcpyAsync(words_ + index, staging_ + index, sizeof(int32_t), hipMemcpyHostToDevice, s));
}

void SlotStalls::write_word(uint32_t index, int32_t value) {
  queue_word(index, value);
  MP_GPU_CHECK(hipStreamSynchronize(static_cast<hipStream_t>(reply_stream_)));
}

void SlotStalls::release(uint32_t layer, uint32_t stamp, const std::byte** table_row, const std::byte* const* row) {
  if (layer >= layers_) throw GpuError("slot stalls: a reply for layer " + std::to_string(layer));
  hipStream_t s = static_cast<hipStream_t>(reply_stream_);
  MP_GPU_CHECK(hipMemcpyAsync(table_row, row, size_t(experts_) * sizeof(const std::byte*), hipMemcpyHostToDevice, s));
  queue_word(layer, int32_t(stamp));  // behind the row on the same stream
  replied_[layer] = stamp;
}

int32_t* SlotStalls::host_abort_word() const { return rows_host_ + record_at() + kTimeoutInts; }

void SlotStalls::abort_through_host_memory() noexcept {
  *reinterpret_cast<volatile int32_t*>(host_abort_word()) = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void SlotStalls::watch_reply() {
  if (watch_) watch_->arm(reply_timeout_);
}

void SlotStalls::abort_all() noexcept {
  aborted_ = true;
  abort_through_host_memory();  // heard by the stalls even while every queue waits on one
  try {
    write_word(layers_, 1);
  } catch (...) {  // the stalls then give up at their time-out
  }
}

void SlotStalls::clear_abort() {
  if (watch_) watch_->disarm();  // an expiry's store lands before the word is cleared
  write_word(layers_, 0);
  *reinterpret_cast<volatile int32_t*>(host_abort_word()) = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  aborted_ = false;
}

uint32_t SlotStalls::timeouts() const {
  return uint32_t(reinterpret_cast<const volatile int32_t*>(rows_host_)[record_at()]);
}

SlotStalls::Timeout SlotStalls::last_timeout() const {
  const volatile int32_t* t = rows_host_ + record_at();
  return Timeout{uint32_t(t[1]), uint32_t(t[2]), uint32_t(t[3])};
}

uint32_t SlotStalls::new_timeouts() {
  const uint32_t now = timeouts();
  return now - std::exchange(timeouts_seen_, now);
}

void SlotStalls::launch_stall(uint32_t layer, uint32_t stamp, int32_t* gate, Stream stream) const {
  if (layer >= layers_)
    throw GpuError("slot stalls: layer " + std::to_string(layer) + " of " + std::to_string(layers_));
  int32_t* record = rows_device_ + record_at();  // the time-out record, then the host's abort word
  launch("gpu slot stall", slot_stall_kernel, 1, 1, 0, native(stream), gate, words_ + layer, stamp, words_ + layers_,
         record + kTimeoutInts, record, layer);
}

}  // namespace moepage::ds4::gpu
