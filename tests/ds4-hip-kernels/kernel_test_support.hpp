// Shared pieces of the GPU kernel tests: seeded random inputs, random weight matrices in every
// stored encoding, device memory that frees itself, and the comparison every test uses
// (max |gpu - cpu| / max |cpu| against a per-dtype threshold, naming op, shape and dtype).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "deepseek4/cpu/gemm.hpp"
#include "deepseek4/cpu/matref.hpp"
#include "deepseek4/cpu/ops.hpp"
#include "deepseek4/cpu/thread_pool.hpp"
#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/hip/device_arena.hpp"
#include "deepseek4/hip/gemm_policy.hpp"
#include "dtype/dtype.hpp"

namespace moepage::ds4::gpu::test {

// Every product on the CUDA cores in float (by default dense products of 8 tokens and more, and
// experts serving 2 or more, take the matrix cores): what the suites that check the CUDA-core
// kernels against the CPU at float's thresholds ask for.
inline const GemmPolicy kCudaCores{.matrix_min_tokens = 0, .expert_min_tokens = 0};

// xorshift64*: the same numbers on every machine and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(0x9E3779B97F4A7C15ull ^ (seed * 0xD1B54A32D192ED03ull)) {}
  uint64_t next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return s_ * 2685821657736338717ull;
  }
  float uniform(float lo = -1.0f, float hi = 1.0f) {
    return lo + (hi - lo) * float(double(next() >> 11) / double(1ull << 53));
  }
  int32_t below(int32_t n) { return int32_t(next() % uint64_t(n)); }
  std::vector<float> floats(size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = uniform(lo, hi);
    return v;
  }

 private:
  uint64_t s_;
};

// Device memory and a stream for one test; everything is released at scope exit.
class Device {
 public:
  Device() : stream_(create_stream()) {}
  ~Device() { destroy_stream(stream_); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  Stream stream() const { return stream_; }
  DeviceArena& arena() { return arena_; }
  DeviceArena& pinned() { return pinned_; }

  template <class T>
  T* put(const std::vector<T>& host) {
    T* d = arena_.take<T>(std::max<uint64_t>(1, host.size()));
    upload(d, host.data(), host.size() * sizeof(T));
    fence();
    return d;
  }
  template <class T>
  T* zeros(uint64_t n) {
    T* d = arena_.take<T>(std::max<uint64_t>(1, n));
    fence();
    return d;
  }
  // upload() and the arena's zero fill run on the legacy default stream, which a non-blocking
  // stream does not wait for, and a pageable upload may return before its DMA lands. A
  // device-to-host copy on that stream returns only after all of it: then the test's stream
  // sees the bytes.
  void fence() {
    std::byte b;
    download(&b, probe_, 1);
  }
  // Waits for the stream, then copies n values back.
  template <class T>
  std::vector<T> get(const T* device, uint64_t n) {
    synchronize(stream_);
    std::vector<T> host(n);
    download(host.data(), device, n * sizeof(T));
    return host;
  }

 private:
  Stream stream_;
  DeviceArena arena_{DeviceArena::Kind::Device};
  DeviceArena pinned_{DeviceArena::Kind::Pinned};
  std::byte* probe_ = arena_.take<std::byte>(1);
};

// A weight matrix in host memory in one of the encodings cpu::matmul reads. Random codes, not
// quantised floats, so every code the decoders know is exercised (no NaN unless asked).
struct HostMat {
  Dtype dtype = Dtype::F32;
  int64_t rows = 0, cols = 0;
  std::vector<std::byte> data, scale;

  cpu::MatRef ref() const {
    return cpu::MatRef{dtype, rows, cols, data.data(), scale.empty() ? nullptr : scale.data()};
  }
  // The same matrix with its bytes copied to the device, `shift` bytes past a 256-byte boundary
  // (a multiple of the element size; non-zero shifts exercise the kernels' unaligned rows).
  cpu::MatRef on(Device& dev, uint64_t shift = 0) const {
    cpu::MatRef m = ref();
    std::byte* d = dev.arena().take<std::byte>(data.size() + shift) + shift;
    upload(d, data.data(), data.size());
    m.data = d;
    if (!scale.empty()) {
      std::byte* s = dev.arena().take<std::byte>(scale.size());
      upload(s, scale.data(), scale.size());
      m.scale = s;
    }
    dev.fence();
    return m;
  }
};

inline bool is_e4m3_nan(uint8_t b) { return (b & 0x7F) == 0x7F; }

// Values about `amplitude / sqrt(cols)` in size. FP8/FP4 codes are uniform over every code
// (subnormals included) with e8m0 scales near 2^0; with_nan keeps the NaN codes of FP8 and
// NaN scales too (only the exact decode test wants them).
inline HostMat random_mat(Rng& rng, Dtype dtype, int64_t rows, int64_t cols, float amplitude = 1.0f,
                          bool with_nan = false) {
  HostMat m;
  m.dtype = dtype;
  m.rows = rows;
  m.cols = cols;
  const float a = amplitude / std::sqrt(float(cols));
  m.data.resize(ExpertLayout::weight_bytes(dtype, uint64_t(rows), uint64_t(cols)));
  m.scale.resize(ExpertLayout::scale_bytes(dtype, uint64_t(rows), uint64_t(cols)));
  const size_t n = size_t(rows * cols);
  switch (dtype) {
    case Dtype::F32:
      for (size_t i = 0; i < n; ++i) {
        const float v = a * rng.uniform();
        std::memcpy(m.data.data() + 4 * i, &v, 4);
      }
      break;
    case Dtype::BF16:
    case Dtype::F16:
      for (size_t i = 0; i < n; ++i) {
        // Some F16 values fall in the subnormal range on purpose.
        const float v = (i % 7 == 0 ? 1e-6f : a) * rng.uniform();
        const uint16_t b = dtype == Dtype::BF16 ? float_to_bf16(v) : float_to_f16(v);
        std::memcpy(m.data.data() + 2 * i, &b, 2);
      }
      break;
    case Dtype::F8_E4M3:
    case Dtype::I8: {
      for (auto& b : m.data) {
        uint8_t v = uint8_t(rng.next() >> 24);
        if (dtype == Dtype::F8_E4M3 && !with_nan && is_e4m3_nan(v)) v = uint8_t(v & 0xF0);
        b = std::byte(v);
      }
      // Codes reach 448 (FP8) or 6 (FP4): scale them down to about `a`.
      const int base = dtype == Dtype::F8_E4M3 ? 127 - 9 : 127 - 3;
      const int shift = int(std::lround(std::log2(std::max(a, 1e-30f))));
      for (auto& s : m.scale) s = std::byte(uint8_t(std::clamp(base + shift + rng.below(3) - 1, 1, 254)));
      if (with_nan && !m.scale.empty()) m.scale.back() = std::byte(0xFF);  // one NaN scale, not a whole row of NaN
      break;
    }
    default: FAIL("random_mat: unsupported dtype");
  }
  return m;
}

inline std::string shape_str(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  for (int64_t d : dims) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
  return s + "]";
}

// max |gpu - cpu| / max |cpu| <= threshold; NaN must match NaN. `what` names op, shape, dtype.
inline void check_close(const std::string& what, const std::vector<float>& gpu, const std::vector<float>& cpu,
                        double threshold) {
  INFO(what);
  REQUIRE(gpu.size() == cpu.size());
  double max_ref = 0, max_diff = 0;
  size_t worst = 0, nan_mismatch = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (std::isnan(cpu[i]) || std::isnan(gpu[i])) {
      if (std::isnan(cpu[i]) != std::isnan(gpu[i])) ++nan_mismatch;
      continue;
    }
    max_ref = std::max(max_ref, std::fabs(double(cpu[i])));
    const double d = std::fabs(double(gpu[i]) - double(cpu[i]));
    if (d > max_diff) {
      max_diff = d;
      worst = i;
    }
  }
  const double rel = max_ref > 0 ? max_diff / max_ref : max_diff;
  INFO("max rel error " << rel << " (threshold " << threshold << ") at " << worst << ": gpu " << gpu[worst] << " cpu "
                        << cpu[worst] << "; NaN mismatches " << nan_mismatch);
  CHECK(nan_mismatch == 0);
  CHECK(rel <= threshold);
  CHECK(max_ref > 0);  // a comparison of zeros proves nothing
}

// Tolerance of a product whose only difference from the CPU is the float summation order (the
// CPU applies FP8/FP4 scales per block after the dot product, the GPU per element).
// What matmul_swiglu must give: cpu::swiglu_clamped(w1 x, w3 x) for n_tokens rows of x (cols
// floats each), [n_tokens, w1.rows].
inline std::vector<float> cpu_swiglu_product(const cpu::MatRef& w1, const cpu::MatRef& w3, const std::vector<float>& x,
                                             int64_t n_tokens, float limit) {
  cpu::ThreadPool pool(1);
  std::vector<float> g(size_t(n_tokens * w1.rows)), u(g.size()), out(g.size());
  cpu::matmul(pool, w1, x.data(), w1.cols, g.data(), w1.rows, n_tokens);
  cpu::matmul(pool, w3, x.data(), w3.cols, u.data(), w3.rows, n_tokens);
  cpu::swiglu_clamped(g.data(), u.data(), int64_t(g.size()), limit, out.data());
  return out;
}

inline double matmul_threshold(Dtype dtype) { return dtype == Dtype::F8_E4M3 || dtype == Dtype::I8 ? 2e-5 : 1e-5; }

}  // namespace moepage::ds4::gpu::test
