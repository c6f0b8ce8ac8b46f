// Every kernel's start and end on the device as the program really ran it, streams overlapping and
// launches overlapped (programmatic dependent launch) as they were: CUPTI's concurrent-kernel
// activity records, written as CSV when the process exits. ncu serialises kernels, and Nsight
// Systems does not run on the lent GPU machines, so this is how a decode step's critical path is
// seen. A measuring tool, not part of the engine: CUDA loads it into any process through its
// injection hook, and bench/gpu/decode-trace.sh sets that up:
//   CUDA_INJECTION64_PATH=.../libmoepage-kernel-trace.so MOEPAGE_KERNEL_TRACE=out.csv moepage run ...
// CSV columns: start_ns,end_ns,stream,grid_x,grid_y,grid_z,block_x,registers,correlation,name
// (CUPTI's timestamps, one clock for the device's and the host's records; name demangled, commas
// replaced). With MOEPAGE_KERNEL_TRACE_API=1 the copies are recorded too (name "memcpy:KIND:BYTES",
// on their stream) and the host's CUDA runtime calls (name "api:FUNCTION", stream 4294967295),
// which show where a decode step's host round trip goes; each recorded call costs the host time.
#include <cupti.h>
#include <cxxabi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

constexpr size_t kBufferBytes = size_t(8) << 20;

std::mutex file_mutex;
FILE* out = nullptr;
std::string path;  // of `out`, for the error

void report(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "moepage kernel-trace: %s failed: %s\n", what, text ? text : "unknown CUPTI error");
}

std::string readable(const char* mangled) {
  if (!mangled) return "?";
  int status = 0;
  char* plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && plain ? plain : mangled;
  std::free(plain);
  for (char& ch : name)
    if (ch == ',' || ch == '\n') ch = ';';
  return name;
}

const char* copy_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    default: return "other";
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  const std::lock_guard<std::mutex> lock(file_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (!out) continue;
    if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      std::fprintf(out, "%llu,%llu,%u,0,0,0,0,0,%u,memcpy:%s:%llu\n", static_cast<unsigned long long>(m->start),
                   static_cast<unsigned long long>(m->end), m->streamId, m->correlationId, copy_kind(m->copyKind),
                   static_cast<unsigned long long>(m->bytes));
      continue;
    }
    if (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      const char* name = nullptr;
      if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name) != CUPTI_SUCCESS) name = nullptr;
      std::fprintf(out, "%llu,%llu,4294967295,0,0,0,0,0,%u,api:%s\n", static_cast<unsigned long long>(a->start),
                   static_cast<unsigned long long>(a->end), a->correlationId, name ? name : "?");
      continue;
    }
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    std::fprintf(out, "%llu,%llu,%u,%d,%d,%d,%d,%u,%u,%s\n", static_cast<unsigned long long>(k->start),
                 static_cast<unsigned long long>(k->end), k->streamId, k->gridX, k->gridY, k->gridZ, k->blockX,
                 unsigned(k->registersPerThread), k->correlationId, readable(k->name).c_str());
  }
  std::free(buffer);
}

void finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped)
    std::fprintf(stderr, "moepage kernel-trace: %zu records dropped; the trace is incomplete\n", dropped);
  const std::lock_guard<std::mutex> lock(file_mutex);
  if (!out) return;
  // A full disk must not leave a silently truncated trace that reads as a shorter run.
  const bool failed = std::ferror(out) != 0;
  if (std::fclose(out) != 0 || failed)
    std::fprintf(stderr, "moepage kernel-trace: writing %s failed; the trace is incomplete\n", path.c_str());
  out = nullptr;
}

}  // namespace

// CUDA's injection entry point, called once when the driver initialises in the traced process.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* target = std::getenv("MOEPAGE_KERNEL_TRACE");
  if (!target || !*target) {
    std::fprintf(stderr, "moepage kernel-trace: MOEPAGE_KERNEL_TRACE (the CSV to write) is not set; tracing nothing\n");
    return 1;
  }
  path = target;
  out = std::fopen(target, "w");
  if (!out) {
    std::fprintf(stderr, "moepage kernel-trace: cannot write %s: %s\n", target, std::strerror(errno));
    return 1;
  }
  std::fprintf(out, "start_ns,end_ns,stream,grid_x,grid_y,grid_z,block_x,registers,correlation,name\n");
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    report("cuptiActivityRegisterCallbacks", r);
    return 1;
  }
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    report("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    return 1;
  }
  const char* api = std::getenv("MOEPAGE_KERNEL_TRACE_API");
  if (api && std::strcmp(api, "1") == 0)
    for (const CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_RUNTIME})
      if ((r = cuptiActivityEnable(kind)) != CUPTI_SUCCESS) report("cuptiActivityEnable(MEMCPY/RUNTIME)", r);
  std::atexit(finish);
  return 1;
}
