#include "deepseek4/cpu/gemm.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "deepseek4/cpu/fp4_decode.hpp"

// matmul_rows is compiled twice on x86-64 (below); the inner loops go into each copy, not called from
// it (a call would land in the baseline code). Not under ThreadSanitizer: the loader runs the copies'
// resolver before the sanitizer's runtime is up, and the process dies before main.
#if defined(__SANITIZE_THREAD__)
#define MOEPAGE_CPU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MOEPAGE_CPU_TSAN 1
#endif
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(MOEPAGE_CPU_TSAN)
#define MOEPAGE_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#define MOEPAGE_CPU_INLINE __attribute__((always_inline)) inline
#else
#define MOEPAGE_CPU_CLONES
#define MOEPAGE_CPU_INLINE inline
#endif

namespace moepage::ds4::cpu {
namespace {

// Lookup tables: every e4m3 byte and every e8m0 scale byte (FP4 bytes: fp4_pairs()).
struct Tables {
  float e4m3[256];
  float e8m0[256];
  Tables() {
    for (int b = 0; b < 256; ++b) {
      e4m3[b] = e4m3_to_float(uint8_t(b));
      e8m0[b] = e8m0_to_float(uint8_t(b));
    }
  }
};
const Tables& tables() {
  static const Tables t;
  return t;
}

// Eight independent partial sums so the compiler can vectorise without -ffast-math.
MOEPAGE_CPU_INLINE float dot(const float* a, const float* b, int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += a[i + k] * b[i + k];
  float tail = 0;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])) + tail;
}

constexpr int64_t kChunk = 512;     // columns decoded at a time (a multiple of 128 and 32)
constexpr int64_t kTokenTile = 64;  // tokens sharing one decoded chunk

}  // namespace

std::string check_matref(const MatRef& m) {
  if (m.rows < 0 || m.cols <= 0) return "empty matrix";
  if (!m.data) return "no data";
  switch (m.dtype) {
    case Dtype::F32:
    case Dtype::BF16:
    case Dtype::F16: return {};
    case Dtype::F8_E4M3:
      if (!m.scale) return "F8_E4M3 weight without its e8m0 block scale";
      return {};
    case Dtype::I8:
      if (!m.scale) return "FP4 (I8) weight without its e8m0 per-32 scale";
      if (m.cols % 32 != 0) return "FP4 (I8) weight whose input width is not a multiple of 32";
      return {};
    default: return "unsupported weight dtype " + std::string(dtype_name(m.dtype));
  }
}

namespace {

// n 16-bit elements from unaligned `p`, each widened by `to_float`.
template <class ToFloat>
void decode_16bit(const std::byte* p, int64_t n, float* out, ToFloat to_float) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    out[i] = to_float(v);
  }
}

}  // namespace

void decode_row(const MatRef& m, int64_t r, int64_t c0, int64_t n, float* out) {
  const int64_t row = m.row_offset + r;
  switch (m.dtype) {
    // Safetensors does not align tensor data, so 16- and 32-bit elements are read with memcpy.
    case Dtype::F32: std::memcpy(out, m.data + (row * m.cols + c0) * 4, size_t(n) * 4); return;
    case Dtype::BF16: decode_16bit(m.data + (row * m.cols + c0) * 2, n, out, bf16_to_float); return;
    case Dtype::F16: decode_16bit(m.data + (row * m.cols + c0) * 2, n, out, f16_to_float); return;
    case Dtype::F8_E4M3: {
      const Tables& t = tables();
      const auto* p = reinterpret_cast<const uint8_t*>(m.data) + row * m.cols;
      const auto* s = reinterpret_cast<const uint8_t*>(m.scale) + (row / 128) * ((m.cols + 127) / 128);
      int64_t c = c0;
      const int64_t end = c0 + n;
      while (c < end) {
        const int64_t block_end = std::min(end, (c / 128 + 1) * 128);
        const float scale = t.e8m0[s[c / 128]];
        for (; c < block_end; ++c) *out++ = t.e4m3[p[c]] * scale;
      }
      return;
    }
    case Dtype::I8: {
      const Tables& t = tables();
      const auto& pairs = fp4_pairs();
      const auto* p = reinterpret_cast<const uint8_t*>(m.data) + row * (m.cols / 2);
      const auto* s = reinterpret_cast<const uint8_t*>(m.scale) + row * (m.cols / 32);
      int64_t c = c0;
      const int64_t end = c0 + n;
      if (c & 1) {  // odd start: the high nibble of the first byte
        *out++ = pairs[p[c / 2]][1] * t.e8m0[s[c / 32]];
        ++c;
      }
      while (c + 1 < end) {
        const int64_t group_end = std::min(end & ~int64_t(1), (c / 32 + 1) * 32);
        const float scale = t.e8m0[s[c / 32]];
        for (; c < group_end; c += 2) {
          const float* pair = pairs[p[c / 2]];
          out[0] = pair[0] * scale;
          out[1] = pair[1] * scale;
          out += 2;
        }
      }
      if (c < end) *out = pairs[p[c / 2]][0] * t.e8m0[s[c / 32]];
      return;
    }
    default:
      std::fill(out, out + n, 0.0f);  // rejected earlier by check_matref
      return;
  }
}

namespace {

// A run of e4m3 codes through their table (restrict: the table and the cursors stay in registers).
MOEPAGE_CPU_INLINE void decode_fp8_run(const uint8_t* __restrict codes, int64_t n, const float* __restrict lut,
                                       float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = lut[codes[i]];
}

// Quantized rows: decode a chunk of codes without their scales, then per scale group one dot
// product times the group's scale (one multiply per group instead of per element).
template <int64_t Group>
MOEPAGE_CPU_INLINE void quantized_row(const MatRef& w, int64_t r, const float* x, int64_t ld_x, int64_t nt, float* acc,
                                      float* buf) {
  const Tables& t = tables();
  const int64_t row = w.row_offset + r;
  const bool fp4 = Group == 32;
  const auto* codes = reinterpret_cast<const uint8_t*>(w.data) + (fp4 ? row * (w.cols / 2) : row * w.cols);
  const auto* scales =
      reinterpret_cast<const uint8_t*>(w.scale) + (fp4 ? row * (w.cols / 32) : (row / 128) * ((w.cols + 127) / 128));
  for (int64_t c0 = 0; c0 < w.cols; c0 += kChunk) {
    const int64_t n = std::min(kChunk, w.cols - c0);
    if (fp4) decode_fp4(codes + c0 / 2, n / 2, buf);
    else decode_fp8_run(codes + c0, n, t.e4m3, buf);
    for (int64_t g0 = 0; g0 < n; g0 += Group) {
      const int64_t len = std::min(Group, n - g0);
      const float scale = t.e8m0[scales[(c0 + g0) / Group]];
      for (int64_t tk = 0; tk < nt; ++tk) acc[tk] += scale * dot(buf + g0, x + tk * ld_x + c0 + g0, len);
    }
  }
}

}  // namespace

// Built twice where the compiler can (x86-64, GCC or clang) and picked by the processor at load: the
// AVX2 copy runs the dot products eight lanes wide where the baseline copy runs them four wide. Each
// lane adds the same products in the same order (dot's eight partial sums, no fused multiply-add),
// so both give the same floats bit for bit.
MOEPAGE_CPU_CLONES
void matmul_rows(const MatRef& w, const float* x, int64_t ld_x, float* y, int64_t ld_y, int64_t n_tokens, int64_t r0,
                 int64_t r1) {
  alignas(64) float buf[kChunk];
  float acc[kTokenTile];
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenTile) {
      const int64_t nt = std::min(kTokenTile, n_tokens - t0);
      const float* xt = x + t0 * ld_x;
      std::fill(acc, acc + nt, 0.0f);
      const bool f32_aligned = reinterpret_cast<uintptr_t>(w.data) % alignof(float) == 0;
      if (w.dtype == Dtype::F32 && f32_aligned) {  // read in place, no decode
        const float* row = reinterpret_cast<const float*>(w.data) + (w.row_offset + r) * w.cols;
        for (int64_t t = 0; t < nt; ++t) acc[t] = dot(row, xt + t * ld_x, w.cols);
      } else if (w.dtype == Dtype::I8) {
        quantized_row<32>(w, r, xt, ld_x, nt, acc, buf);
      } else if (w.dtype == Dtype::F8_E4M3) {
        quantized_row<128>(w, r, xt, ld_x, nt, acc, buf);
      } else {
        for (int64_t c0 = 0; c0 < w.cols; c0 += kChunk) {
          const int64_t n = std::min(kChunk, w.cols - c0);
          decode_row(w, r, c0, n, buf);
          for (int64_t t = 0; t < nt; ++t) acc[t] += dot(buf, xt + t * ld_x + c0, n);
        }
      }
      for (int64_t t = 0; t < nt; ++t) y[(t0 + t) * ld_y + r] = acc[t];
    }
  }
}

void matmul(ThreadPool& pool, const MatRef& w, const float* x, int64_t ld_x, float* y, int64_t ld_y, int64_t n_tokens) {
  // About 16k multiply-adds per range keeps the wake-up cost small next to the work.
  const int64_t min_rows = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, w.cols * n_tokens));
  pool.parallel_for(
      w.rows, [&](int64_t b, int64_t e, unsigned) { matmul_rows(w, x, ld_x, y, ld_y, n_tokens, b, e); }, min_rows);
}

}  // namespace moepage::ds4::cpu
