// control_latency: how long the paged decode's small control messages take between host and GPU,
// with the link idle and with it busy copying expert-sized pieces on another stream (as the
// transport does while a layer's misses land). Prints one JSON object; every figure is the host's
// wall time from queueing to seeing the result, median and 90th percentile in microseconds.
//   launch         a one-thread kernel writes a sequence number into mapped host memory; the
//                  host spins on it (the floor: one launch and one write across the link)
//   d2h_event      the kernel writes a routing record (336 bytes) to device memory, an async
//                  copy brings it to pinned memory, an event follows and the host synchronizes
//                  on the event (how the router's ids reach the host now)
//   d2h_mapped     the kernel writes the record straight into mapped host memory, then the
//                  sequence number; the host spins on it
//   h2d_copy       the host fills a pinned record, an async copy takes it to the device and a
//                  kernel reads it there, then writes the sequence number (how a layer's expert
//                  group record reaches the device now)
//   h2d_mapped     the kernel reads the pinned record straight from mapped host memory instead
// usage: control_latency [--reps N] [--busy-pieces N] [--piece-bytes BYTES]
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/hip_compat.hpp"

namespace {

constexpr int kRecordInts = 84;  // 336 bytes: the size of a 12-layer step's routing record

void check(hipError_t e, const char* what) {
  if (e != hipSuccess) throw std::runtime_error(std::string(what) + ": " + hipGetErrorString(e));
}

__global__ void stamp_kernel(volatile uint32_t* flag, uint32_t seq) {
  __threadfence_system();
  *flag = seq;
}

// Writes the record (to device memory or mapped host memory), then the sequence number.
__global__ void record_kernel(int32_t* record, volatile uint32_t* flag, uint32_t seq) {
  for (int i = int(threadIdx.x); i < kRecordInts; i += int(blockDim.x)) record[i] = int32_t(seq) + i;
  __threadfence_system();  // each writer's record values before the flag
  __syncthreads();
  if (threadIdx.x == 0) *flag = seq;
}

// Reads the record (device memory or mapped host memory) into device memory, checks it, then
// writes the sequence number (or its complement when the record was not the expected one).
__global__ void consume_kernel(const volatile int32_t* record, int32_t* copy, volatile uint32_t* flag, uint32_t seq) {
  __shared__ int bad;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  for (int i = int(threadIdx.x); i < kRecordInts; i += int(blockDim.x)) {
    const int32_t v = record[i];
    copy[i] = v;
    if (v != int32_t(seq) + i) atomicAdd(&bad, 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    *flag = bad ? ~seq : seq;
  }
}

using Clock = std::chrono::steady_clock;

void spin_until(volatile uint32_t* flag, uint32_t seq, const char* what) {
  const auto start = Clock::now();
  for (uint64_t i = 0;; ++i) {
    const uint32_t v = *flag;
    if (v == seq) return;
    if (v == ~seq) throw std::runtime_error(std::string(what) + ": the kernel read a record other than the host's");
    if ((i & 0xffff) == 0 && Clock::now() - start > std::chrono::seconds(2))
      throw std::runtime_error(std::string(what) + ": no answer from the GPU within 2 s");
  }
}

struct Stats {
  double median = 0, p90 = 0;
};

Stats summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 9 / 10]};
}

struct Probe {
  hipStream_t st{}, bg{};
  hipEvent_t ev{}, bg_done{};
  uint32_t* flag_host = nullptr;  // mapped
  uint32_t* flag_dev = nullptr;   // its device address
  int32_t* rec_host = nullptr;    // mapped record
  int32_t* rec_host_dev = nullptr;
  int32_t* rec_dev = nullptr;
  int32_t* rec_copy = nullptr;
  uint8_t* big_host = nullptr;
  uint8_t* big_dev = nullptr;
  uint64_t piece = 0;
  uint32_t seq = 1;

  explicit Probe(uint64_t piece_bytes) : piece(piece_bytes) {
    check(hipStreamCreateWithFlags(&st, hipStreamNonBlocking), "stream");
    check(hipStreamCreateWithFlags(&bg, hipStreamNonBlocking), "stream");
    check(hipEventCreateWithFlags(&ev, hipEventDisableTiming), "event");
    check(hipEventCreateWithFlags(&bg_done, hipEventDisableTiming), "event");
    void* p = nullptr;
    check(hipHostMalloc(&p, 4096, MP_HOST_ALLOC_SHARED), "hipHostMalloc (flag)");
    flag_host = static_cast<uint32_t*>(p);
    *flag_host = 0;
    check(hipHostGetDevicePointer(reinterpret_cast<void**>(&flag_dev), flag_host, 0), "device pointer (flag)");
    check(hipHostMalloc(&p, 4096, MP_HOST_ALLOC_SHARED), "hipHostMalloc (record)");
    rec_host = static_cast<int32_t*>(p);
    check(hipHostGetDevicePointer(reinterpret_cast<void**>(&rec_host_dev), rec_host, 0), "device pointer (record)");
    check(hipMalloc(reinterpret_cast<void**>(&rec_dev), 4096), "hipMalloc (record)");
    check(hipMalloc(reinterpret_cast<void**>(&rec_copy), 4096), "hipMalloc (copy)");
    check(hipHostMalloc(&p, piece, hipHostMallocPortable), "hipHostMalloc (pieces)");
    big_host = static_cast<uint8_t*>(p);
    std::memset(big_host, 1, piece);
    check(hipMalloc(reinterpret_cast<void**>(&big_dev), piece * 4), "hipMalloc (pieces)");
  }

  // Queues `pieces` host-to-device copies on the background stream; returns at once.
  void start_busy(int pieces) {
    for (int i = 0; i < pieces; ++i)
      check(hipMemcpyAsync(big_dev + piece * uint64_t(i % 4), big_host, piece, hipMemcpyHostToDevice, bg), "busy copy");
    check(hipEventRecord(bg_done, bg), "event");
  }
  bool busy() const { return hipEventQuery(bg_done) == hipErrorNotReady; }

  double once(const std::string& mode) {
    const uint32_t s = ++seq;
    const auto t0 = Clock::now();
    if (mode == "launch") {
      stamp_kernel<<<1, 1, 0, st>>>(flag_dev, s);
      check(hipGetLastError(), "launch");
      spin_until(flag_host, s, "launch");
    } else if (mode == "d2h_event") {
      record_kernel<<<1, 128, 0, st>>>(rec_dev, flag_dev, s);
      check(hipMemcpyAsync(rec_host, rec_dev, kRecordInts * sizeof(int32_t), hipMemcpyDeviceToHost, st), "d2h");
      check(hipEventRecord(ev, st), "event");
      check(hipEventSynchronize(ev), "event sync");
      if (rec_host[kRecordInts - 1] != int32_t(s) + kRecordInts - 1)
        throw std::runtime_error("d2h_event: stale record");
    } else if (mode == "d2h_mapped") {
      record_kernel<<<1, 128, 0, st>>>(rec_host_dev, flag_dev, s);
      check(hipGetLastError(), "launch");
      spin_until(flag_host, s, "d2h_mapped");
      if (rec_host[kRecordInts - 1] != int32_t(s) + kRecordInts - 1)
        throw std::runtime_error("d2h_mapped: stale record");
    } else {
      for (int i = 0; i < kRecordInts; ++i) rec_host[i] = int32_t(s) + i;
      if (mode == "h2d_copy") {
        check(hipMemcpyAsync(rec_dev, rec_host, kRecordInts * sizeof(int32_t), hipMemcpyHostToDevice, st), "h2d");
        consume_kernel<<<1, 128, 0, st>>>(rec_dev, rec_copy, flag_dev, s);
      } else {
        consume_kernel<<<1, 128, 0, st>>>(rec_host_dev, rec_copy, flag_dev, s);
      }
      check(hipGetLastError(), "launch");
      spin_until(flag_host, s, mode.c_str());
    }
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
};

// A positive integer of at most `most`.
long long parse_count(const char* flag, const char* text, long long most) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v <= 0 || v > most)
    throw std::runtime_error(std::string(flag) + ": expected an integer from 1 to " + std::to_string(most) + ", got '" +
                             text + "'");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    int reps = 400, busy_pieces = 600;
    uint64_t piece = 13ull << 20;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (i + 1 >= argc) throw std::runtime_error(a + ": needs a value");
      // Pieces of up to 1 GiB (the probe holds four on the device and one pinned).
      if (a == "--reps") reps = int(parse_count("--reps", argv[++i], 1000000));
      else if (a == "--busy-pieces") busy_pieces = int(parse_count("--busy-pieces", argv[++i], 1000000));
      else if (a == "--piece-bytes") piece = uint64_t(parse_count("--piece-bytes", argv[++i], 1ll << 30));
      else throw std::runtime_error("unknown option " + a + " (known: --reps, --busy-pieces, --piece-bytes)");
    }
    Probe p(piece);
    const char* modes[] = {"launch", "d2h_event", "d2h_mapped", "h2d_copy", "h2d_mapped"};
    for (const char* m : modes) p.once(m);  // warm-up, and each mode checked once
    std::printf("{\"reps\": %d, \"piece_bytes\": %llu", reps, static_cast<unsigned long long>(piece));
    for (int busy = 0; busy < 2; ++busy) {
      std::vector<std::vector<double>> us(std::size(modes));
      if (busy) p.start_busy(busy_pieces);
      int busy_all_along = 1;
      for (int r = 0; r < reps; ++r)
        for (size_t m = 0; m < std::size(modes); ++m) us[m].push_back(p.once(modes[m]));
      if (busy) {
        busy_all_along = p.busy() ? 1 : 0;  // the link was still busy after the last probe
        check(hipStreamSynchronize(p.bg), "busy copies");
      }
      for (size_t m = 0; m < std::size(modes); ++m) {
        const Stats s = summarize(us[m]);
        std::printf(", \"%s_%s\": {\"median_us\": %.2f, \"p90_us\": %.2f}", modes[m], busy ? "busy" : "idle", s.median,
                    s.p90);
      }
      if (busy) std::printf(", \"link_busy_throughout\": %s", busy_all_along ? "true" : "false");
    }
    std::printf("}\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "control_latency: %s\n", e.what());
    return 1;
  }
}
