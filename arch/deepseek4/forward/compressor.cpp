#include "deepseek4/forward/compressor.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "deepseek4/cpu/ops.hpp"

namespace moepage::ds4 {

void init_compressor_state(const CompressorParams& p, int64_t max_entries, CompressorState& s) {
  s.kv.assign(size_t(p.ratio) * p.width, 0.0f);
  s.gate.assign(size_t(p.ratio) * p.width, 0.0f);
  if (p.overlap) {
    s.prev_kv.assign(size_t(p.ratio) * p.dim, 0.0f);
    s.prev_gate.assign(size_t(p.ratio) * p.dim, 0.0f);
  }
  s.entries.assign(size_t(max_entries) * p.dim, 0.0f);
  s.reset();
}

void compressor_push(const CompressorParams& p, const cpu::Rope& rope, double eps, int64_t position, const float* kv,
                     const float* gate, CompressorState& s, float* scratch) {
  const uint32_t R = p.ratio, dim = p.dim, width = p.width;
  const int64_t slot = position % R;
  float* skv = s.kv.data() + slot * width;
  float* sgate = s.gate.data() + slot * width;
  const float* ape = p.ape.data() + slot * width;
  for (uint32_t c = 0; c < width; ++c) {
    skv[c] = kv[c];
    sgate[c] = gate[c] + ape[c];
  }
  if (slot != R - 1) return;

  const int64_t w = position / R;
  if (w != s.n_entries)
    throw std::logic_error("compressor: window " + std::to_string(w) + " closes after " + std::to_string(s.n_entries) +
                           " entries (tokens skipped?)");
  if (size_t(w + 1) * dim > s.entries.size())
    throw std::length_error("compressor: more than " + std::to_string(s.entries.size() / dim) +
                            " entries; the sequence is longer than the model's max context");
  float* pooled = scratch;
  float* cos = scratch + 2 * dim;
  float* sin = cos + rope.rope_dim() / 2;
  // Cb (or the whole kv without overlap) sits at column offset `cur` of each slot.
  const uint32_t cur = p.overlap ? dim : 0;
  const bool with_prev = p.overlap && s.has_prev;
  for (uint32_t c = 0; c < dim; ++c) {
    double m = -INFINITY;
    for (uint32_t j = 0; j < R; ++j) m = std::max(m, double(s.gate[j * width + cur + c]));
    if (with_prev)
      for (uint32_t j = 0; j < R; ++j) m = std::max(m, double(s.prev_gate[j * dim + c]));
    double den = 0, num = 0;
    for (uint32_t j = 0; j < R; ++j) {
      const double e = std::exp(double(s.gate[j * width + cur + c]) - m);
      den += e;
      num += e * double(s.kv[j * width + cur + c]);
    }
    if (with_prev)
      for (uint32_t j = 0; j < R; ++j) {
        const double e = std::exp(double(s.prev_gate[j * dim + c]) - m);
        den += e;
        num += e * double(s.prev_kv[j * dim + c]);
      }
    pooled[c] = float(num / den);
  }
  float* entry = s.entries.data() + w * dim;
  cpu::rms_norm(pooled, dim, p.norm.data(), eps, entry);
  rope.angles(w * R, cos, sin);
  rope.rotate(entry + dim - rope.rope_dim(), cos, sin, false);
  s.n_entries = w + 1;
  if (p.overlap) {  // this window's Ca half feeds the next entry
    for (uint32_t j = 0; j < R; ++j)
      for (uint32_t c = 0; c < dim; ++c) {
        s.prev_kv[j * dim + c] = s.kv[j * width + c];
        s.prev_gate[j * dim + c] = s.gate[j * width + c];
      }
    s.has_prev = true;
  }
}

}  // namespace moepage::ds4
