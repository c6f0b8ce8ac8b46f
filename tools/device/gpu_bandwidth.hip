// gpu_bandwidth: the three rates expert paging is bounded by, as one JSON object.
//   device-to-device copy (HBM bandwidth; what reading resident experts costs at best)
//   pinned host -> device in expert-sized pieces (13 MiB by default; the paging copy)
//   page-cache reads with N threads (pread, 4 MiB chunks; where paged expert bytes come from)
// and, with --paths 1 (and --file), the paths a miss can take from the file to the device:
//   cache_to_device   page cache -> pinned staging -> device, reader threads and copies together,
//                     as the pinned-async transport does it (the two copies share host memory)
//   mapped_to_device  the file mapped and registered with the GPU (read-only), copied straight
//                     from the page cache: one copy, no staging (and the seconds registering took)
//   direct_read       O_DIRECT reads with N threads: the disk's own rate at depth N
// usage: gpu_bandwidth [--file PATH] [--threads 1,2,4,8,16] [--device-bytes BYTES]
//                      [--piece-bytes BYTES] [--pieces N] [--reps N] [--device I] [--paths 0|1]
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpu/hip_compat.hpp"

namespace {

constexpr uint64_t kMiB = 1ull << 20;

void check(hipError_t e, const char* what) {
  if (e != hipSuccess) throw std::runtime_error(std::string(what) + ": " + hipGetErrorString(e));
}

struct Options {
  std::string file;
  std::vector<int> threads{1, 2, 4, 8, 16};
  uint64_t device_bytes = 1ull << 30;
  uint64_t piece_bytes = 13 * kMiB;
  uint64_t pieces = 32;
  uint64_t chunk_bytes = 4 * kMiB;
  int reps = 5;
  int device = 0;
  bool paths = false;
};

uint64_t parse_count(const std::string& flag, const char* text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || v == 0)
    throw std::runtime_error(flag + ": expected a positive integer, got '" + text + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc)
      throw std::runtime_error(flag + ": missing value (see the usage at the top of gpu_bandwidth.hip)");
    const char* value = argv[++i];
    if (flag == "--file") {
      o.file = value;
    } else if (flag == "--threads") {
      o.threads.clear();
      std::string list = value;
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        o.threads.push_back(static_cast<int>(parse_count(flag, list.substr(start, comma - start).c_str())));
        start = comma + 1;
      }
    } else if (flag == "--device-bytes") {
      o.device_bytes = parse_count(flag, value);
    } else if (flag == "--piece-bytes") {
      o.piece_bytes = parse_count(flag, value);
    } else if (flag == "--pieces") {
      o.pieces = parse_count(flag, value);
    } else if (flag == "--reps") {
      o.reps = static_cast<int>(parse_count(flag, value));
    } else if (flag == "--device") {
      o.device = std::atoi(value);
    } else if (flag == "--paths") {
      o.paths = std::string(value) == "1";
    } else {
      throw std::runtime_error("unknown option " + flag);
    }
  }
  return o;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // names and paths here never need them
    out += c;
  }
  return out + "\"";
}

// Seconds between two events, the best of `reps` runs of `work` on `stream`.
template <typename Work>
double best_seconds(hipStream_t stream, int reps, Work work) {
  hipEvent_t start = nullptr, stop = nullptr;
  check(hipEventCreate(&start), "hipEventCreate");
  check(hipEventCreate(&stop), "hipEventCreate");
  work();  // warm-up: first-touch page mappings and clocks
  check(hipStreamSynchronize(stream), "hipStreamSynchronize");
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    check(hipEventRecord(start, stream), "hipEventRecord");
    work();
    check(hipEventRecord(stop, stream), "hipEventRecord");
    check(hipEventSynchronize(stop), "hipEventSynchronize");
    float ms = 0;
    check(hipEventElapsedTime(&ms, start, stop), "hipEventElapsedTime");
    best = std::min(best, ms / 1e3);
  }
  check(hipEventDestroy(start), "hipEventDestroy");
  check(hipEventDestroy(stop), "hipEventDestroy");
  return best;
}

std::string device_to_device(const Options& o, hipStream_t stream) {
  void* a = nullptr;
  void* b = nullptr;
  check(hipMalloc(&a, o.device_bytes), "hipMalloc (copy source)");
  check(hipMalloc(&b, o.device_bytes), "hipMalloc (copy destination)");
  check(hipMemsetAsync(a, 1, o.device_bytes, stream), "hipMemsetAsync");
  const double s = best_seconds(stream, o.reps, [&] {
    check(hipMemcpyAsync(b, a, o.device_bytes, hipMemcpyDeviceToDevice, stream), "hipMemcpyAsync (device to device)");
  });
  check(hipFree(a), "hipFree");
  check(hipFree(b), "hipFree");
  const double copied = static_cast<double>(o.device_bytes) / s;
  // A copy reads and writes every byte: HBM traffic is twice what was copied.
  return "{\"bytes\": " + std::to_string(o.device_bytes) + ", \"best_s\": " + std::to_string(s) +
         ", \"copied_bytes_per_s\": " + std::to_string(copied) +
         ", \"read_write_bytes_per_s\": " + std::to_string(2 * copied) + ", \"reps\": " + std::to_string(o.reps) + "}";
}

std::string pinned_to_device(const Options& o, hipStream_t stream) {
  const uint64_t total = o.piece_bytes * o.pieces;
  void* host = nullptr;
  void* dev = nullptr;
  check(hipHostMalloc(&host, total, hipHostMallocDefault), "hipHostMalloc (pinned source)");
  check(hipMalloc(&dev, total), "hipMalloc (paging destination)");
  std::memset(host, 1, total);
  // One copy per piece, as a pager issues them: per-copy overhead is part of the rate.
  const double s = best_seconds(stream, o.reps, [&] {
    for (uint64_t p = 0; p < o.pieces; ++p) {
      check(hipMemcpyAsync(static_cast<char*>(dev) + p * o.piece_bytes, static_cast<char*>(host) + p * o.piece_bytes,
                           o.piece_bytes, hipMemcpyHostToDevice, stream),
            "hipMemcpyAsync (pinned to device)");
    }
  });
  check(hipHostFree(host), "hipHostFree");
  check(hipFree(dev), "hipFree");
  return "{\"piece_bytes\": " + std::to_string(o.piece_bytes) + ", \"pieces\": " + std::to_string(o.pieces) +
         ", \"best_s\": " + std::to_string(s) + ", \"bytes_per_s\": " + std::to_string(total / s) +
         ", \"reps\": " + std::to_string(o.reps) + "}";
}

// Reads the whole file with `threads` threads taking 4 MiB chunks from a shared counter; returns seconds.
double read_file(int fd, uint64_t size, uint64_t chunk, int threads) {
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  const uint64_t chunks = (size + chunk - 1) / chunk;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::vector<char> buffer(chunk);
      for (uint64_t c = next++; c < chunks; c = next++) {
        const uint64_t offset = c * chunk;
        const uint64_t want = std::min(chunk, size - offset);
        uint64_t got = 0;
        while (got < want) {
          const ssize_t n = pread(fd, buffer.data() + got, want - got, static_cast<off_t>(offset + got));
          if (n <= 0) {
            failed = true;
            return;
          }
          got += static_cast<uint64_t>(n);
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  if (failed) throw std::runtime_error("pread failed or came up short");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string page_cache(const Options& o) {
  if (o.file.empty()) return "null";
  const int fd = open(o.file.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error(o.file + ": cannot be opened: " + std::strerror(errno));
  const off_t end = lseek(fd, 0, SEEK_END);
  if (end <= 0) {
    close(fd);
    throw std::runtime_error(o.file + ": empty or unreadable size");
  }
  const uint64_t size = static_cast<uint64_t>(end);
  read_file(fd, size, o.chunk_bytes, 8);  // warm the page cache; not measured
  std::string runs;
  for (int threads : o.threads) {
    double best = 1e30;
    for (int r = 0; r < std::max(1, o.reps / 2); ++r)
      best = std::min(best, read_file(fd, size, o.chunk_bytes, threads));
    runs += std::string(runs.empty() ? "" : ", ") + "{\"threads\": " + std::to_string(threads) +
            ", \"best_s\": " + std::to_string(best) + ", \"bytes_per_s\": " + std::to_string(size / best) + "}";
  }
  close(fd);
  return "{\"file\": " + json_string(o.file) + ", \"file_bytes\": " + std::to_string(size) +
         ", \"chunk_bytes\": " + std::to_string(o.chunk_bytes) + ", \"runs\": [" + runs + "]}";
}


// One reader thread's pinned staging ring of cache_pipeline.
struct Reader {
  std::vector<void*> buffers;
  std::vector<hipEvent_t> events;
  std::vector<bool> busy;
  hipStream_t stream = nullptr;
};

// Page cache -> pinned staging -> device over the first `span` bytes of fd: `threads` readers take
// `chunk`-byte pieces from a shared counter, pread each into the next of their `ring` pinned
// buffers (waiting for that buffer's previous copy first) and copy it to dev on one shared stream
// under a lock (as pinned-async does) or on a stream of their own. Returns seconds until every
// copy completed.
double cache_pipeline(int fd, uint64_t span, uint64_t chunk, int threads, int ring, bool own_streams, char* dev) {
  std::vector<Reader> readers(static_cast<size_t>(threads));
  hipStream_t shared = nullptr;
  check(hipStreamCreateWithFlags(&shared, hipStreamNonBlocking), "hipStreamCreateWithFlags");
  for (Reader& r : readers) {
    r.buffers.assign(size_t(ring), nullptr);
    r.events.assign(size_t(ring), nullptr);
    r.busy.assign(size_t(ring), false);
    for (int b = 0; b < ring; ++b) {
      check(hipHostMalloc(&r.buffers[size_t(b)], chunk, hipHostMallocDefault), "hipHostMalloc (staging)");
      check(hipEventCreateWithFlags(&r.events[size_t(b)], hipEventDisableTiming), "hipEventCreate");
    }
    r.stream = shared;
    if (own_streams) check(hipStreamCreateWithFlags(&r.stream, hipStreamNonBlocking), "hipStreamCreateWithFlags");
  }
  std::mutex copy_lock;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  const uint64_t chunks = (span + chunk - 1) / chunk;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Reader& r = readers[size_t(t)];
      for (uint64_t c = next++, k = 0; c < chunks && !failed; c = next++, ++k) {
        const size_t b = size_t(k % uint64_t(ring));
        if (r.busy[b] && hipEventSynchronize(r.events[b]) != hipSuccess) failed = true;
        const uint64_t offset = c * chunk, want = std::min(chunk, span - offset);
        if (pread(fd, r.buffers[b], want, off_t(offset)) != ssize_t(want)) failed = true;
        std::unique_lock<std::mutex> lock(copy_lock, std::defer_lock);
        if (!own_streams) lock.lock();
        if (hipMemcpyAsync(dev + offset, r.buffers[b], want, hipMemcpyHostToDevice, r.stream) != hipSuccess ||
            hipEventRecord(r.events[b], r.stream) != hipSuccess)
          failed = true;
        r.busy[b] = true;
      }
      for (hipEvent_t e : r.events) hipEventSynchronize(e);
    });
  }
  for (std::thread& t : pool) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (Reader& r : readers) {
    for (void* b : r.buffers) hipHostFree(b);
    for (hipEvent_t e : r.events) hipEventDestroy(e);
    if (own_streams) hipStreamDestroy(r.stream);
  }
  hipStreamDestroy(shared);
  if (failed) throw std::runtime_error("cache_to_device: a read, copy or event failed");
  return seconds;
}

struct PathFile {
  int fd = -1;
  uint64_t span = 0;  // bytes measured: the file, at most 2 GiB
};

PathFile open_path_file(const Options& o) {
  PathFile f;
  f.fd = open(o.file.c_str(), O_RDONLY);
  if (f.fd < 0) throw std::runtime_error(o.file + ": cannot be opened: " + std::strerror(errno));
  const off_t end = lseek(f.fd, 0, SEEK_END);
  f.span = std::min<uint64_t>(end > 0 ? uint64_t(end) : 0, 2048 * kMiB) & ~(kMiB - 1);
  if (f.span == 0) throw std::runtime_error(o.file + ": shorter than 1 MiB");
  return f;
}

// One reader setting of cache_to_device.
struct Setting {
  int threads, ring;
  uint64_t chunk;
  bool own_streams;
};

std::string cache_to_device(const Options& o, const PathFile& f, char* dev) {
  const Setting settings[] = {{8, 2, 32 * kMiB, false}, {8, 4, 4 * kMiB, false}, {16, 4, 2 * kMiB, false},
                              {16, 4, 4 * kMiB, false}, {16, 4, 4 * kMiB, true},  {4, 4, 4 * kMiB, false}};
  std::string runs;
  for (const Setting& st : settings) {
    double best = 1e30;
    for (int r = 0; r < std::max(1, o.reps / 2); ++r)
      best = std::min(best, cache_pipeline(f.fd, f.span, st.chunk, st.threads, st.ring, st.own_streams, dev));
    runs += std::string(runs.empty() ? "" : ", ") + "{\"threads\": " + std::to_string(st.threads) +
            ", \"chunk_bytes\": " + std::to_string(st.chunk) + ", \"ring\": " + std::to_string(st.ring) +
            ", \"streams\": " + (st.own_streams ? "\"per thread\"" : "\"one, shared\"") +
            ", \"best_s\": " + std::to_string(best) + ", \"bytes_per_s\": " + std::to_string(f.span / best) + "}";
  }
  return "{\"span_bytes\": " + std::to_string(f.span) + ", \"runs\": [" + runs + "]}";
}

std::string mapped_to_device(const Options& o, const PathFile& f, char* dev, hipStream_t stream) {
  void* map = mmap(nullptr, f.span, PROT_READ, MAP_SHARED, f.fd, 0);
  if (map == MAP_FAILED) return "{\"error\": " + json_string(std::string("mmap: ") + std::strerror(errno)) + "}";
  const auto t0 = std::chrono::steady_clock::now();
  const hipError_t reg = hipHostRegister(map, f.span, MP_HOST_REGISTER_READ_ONLY);
  const double register_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (reg != hipSuccess) {
    munmap(map, f.span);
    hipGetLastError();  // clear the sticky-free error
    return "{\"error\": " + json_string(std::string("hipHostRegister: ") + hipGetErrorString(reg)) + "}";
  }
  const uint64_t pieces = f.span / o.piece_bytes;
  const double s = best_seconds(stream, o.reps, [&] {
    for (uint64_t p = 0; p < pieces; ++p)
      check(hipMemcpyAsync(dev + p * o.piece_bytes, static_cast<char*>(map) + p * o.piece_bytes, o.piece_bytes,
                           hipMemcpyHostToDevice, stream),
            "hipMemcpyAsync (mapped to device)");
  });
  check(hipHostUnregister(map), "hipHostUnregister");
  munmap(map, f.span);
  return "{\"span_bytes\": " + std::to_string(f.span) + ", \"register_s\": " + std::to_string(register_s) +
         ", \"piece_bytes\": " + std::to_string(o.piece_bytes) + ", \"best_s\": " + std::to_string(s) +
         ", \"bytes_per_s\": " + std::to_string(double(pieces * o.piece_bytes) / s) + "}";
}

// O_DIRECT reads of the span with `threads` threads, 4 MiB aligned buffers: seconds.
double direct_read(const std::string& path, uint64_t span, int threads) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd < 0) throw std::runtime_error(path + ": O_DIRECT open failed: " + std::strerror(errno));
  constexpr uint64_t kChunk = 4 * kMiB;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      void* buffer = nullptr;
      if (posix_memalign(&buffer, 4096, kChunk) != 0) {
        failed = true;
        return;
      }
      for (uint64_t c = next++; c < span / kChunk; c = next++)
        if (pread(fd, buffer, kChunk, off_t(c * kChunk)) != ssize_t(kChunk)) failed = true;
      std::free(buffer);
    });
  }
  for (std::thread& t : pool) t.join();
  close(fd);
  if (failed) throw std::runtime_error(path + ": an O_DIRECT read failed or came up short");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string direct_reads(const Options& o, const PathFile& f) {
  std::string runs;
  for (int threads : {1, 4, 16, 32}) {
    const double s = direct_read(o.file, f.span, threads);
    runs += std::string(runs.empty() ? "" : ", ") + "{\"threads\": " + std::to_string(threads) +
            ", \"seconds\": " + std::to_string(s) + ", \"bytes_per_s\": " + std::to_string(f.span / s) + "}";
  }
  return "{\"span_bytes\": " + std::to_string(f.span) + ", \"chunk_bytes\": " + std::to_string(4 * kMiB) +
         ", \"runs\": [" + runs + "]}";
}

// The three miss paths, as JSON members (each an object), or "" without --paths.
std::string miss_paths(const Options& o, hipStream_t stream) {
  if (!o.paths || o.file.empty()) return "";
  const PathFile f = open_path_file(o);
  char* dev = nullptr;
  check(hipMalloc(reinterpret_cast<void**>(&dev), f.span), "hipMalloc (miss path destination)");
  const std::string pipeline = cache_to_device(o, f, dev);
  const std::string mapped = mapped_to_device(o, f, dev, stream);
  check(hipFree(dev), "hipFree");
  const std::string direct = direct_reads(o, f);
  close(f.fd);
  return ",\n \"cache_to_device\": " + pipeline + ",\n \"mapped_to_device\": " + mapped + ",\n \"direct_read\": " + direct;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    check(hipSetDevice(o.device), "hipSetDevice");
    hipDeviceProp_t prop{};
    check(hipGetDeviceProperties(&prop, o.device), "hipGetDeviceProperties");
    hipStream_t stream = nullptr;
    check(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking), "hipStreamCreateWithFlags");
    const std::string d2d = device_to_device(o, stream);
    const std::string h2d = pinned_to_device(o, stream);
    const std::string cache = page_cache(o);
    const std::string paths = miss_paths(o, stream);
    check(hipStreamDestroy(stream), "hipStreamDestroy");
    std::printf("{\"device\": {\"index\": %d, \"name\": %s, \"total_bytes\": %llu},\n", o.device,
                json_string(prop.name).c_str(), static_cast<unsigned long long>(prop.totalGlobalMem));
    std::printf(" \"device_to_device\": %s,\n \"pinned_to_device\": %s,\n \"page_cache\": %s%s}\n", d2d.c_str(),
                h2d.c_str(), cache.c_str(), paths.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_bandwidth: error: %s\n", e.what());
    return 1;
  }
}
