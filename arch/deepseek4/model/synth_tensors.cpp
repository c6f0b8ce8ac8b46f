#include "deepseek4/model/synth_tensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "checkpoint/dequantize.hpp"
#include "checkpoint/quantize.hpp"
#include "checkpoint/safetensors_header.hpp"
#include "deepseek4/model/rng.hpp"

namespace moepage::ds4 {
namespace {

constexpr uint64_t kChunkBytes = 4u << 20;  // bound on what one generator holds in memory
constexpr float kSqrt3 = 1.7320508f;

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// Fills `out` (a band of rows of the logical tensor) with the tensor's values.
using Filler = void (*)(Rng&, float*, uint64_t n, float scale);
void fill_uniform(Rng& r, float* out, uint64_t n, float a) {
  for (uint64_t i = 0; i < n; ++i) out[i] = r.symmetric(a);
}
void fill_around_one(Rng& r, float* out, uint64_t n, float a) {
  for (uint64_t i = 0; i < n; ++i) out[i] = 1.0f + r.symmetric(a);
}
void fill_offset(Rng& r, float* out, uint64_t n, float a) {  // [0.5, 0.5 + a)
  for (uint64_t i = 0; i < n; ++i) out[i] = 0.5f + a * r.uniform();
}
void fill_bias(Rng& r, float* out, uint64_t n, float a) {  // nonzero, either sign: +-[a/10, a)
  for (uint64_t i = 0; i < n; ++i) {
    const float m = a * (0.1f + 0.9f * r.uniform());
    out[i] = (r.next() & 1) ? m : -m;
  }
}

struct ValueRule {
  Filler fill;
  float amplitude;
};

ValueRule rule_for(const TensorSpec& s) {
  const std::string& n = s.name;
  const float fan_in = s.shape.size() >= 2 ? float(s.shape[1]) : 1.0f;
  const float proj = kSqrt3 / std::sqrt(fan_in);          // uniform with std 1/sqrt(fan_in)
  if (n.ends_with("_scale")) return {fill_offset, 1.0f};  // mHC scales in [0.5, 1.5)
  if (n.ends_with("_base")) return {fill_uniform, 0.5f};
  if (n.ends_with("_fn")) return {fill_uniform, proj};
  if (n.ends_with("ape")) return {fill_uniform, 0.5f};
  if (n.ends_with("attn_sink")) return {fill_uniform, 1.0f};
  if (n.ends_with("gate.bias")) return {fill_bias, 0.1f};
  if (contains(n, "norm.weight")) return {fill_around_one, 0.1f};
  if (n == "embed.weight") return {fill_uniform, kSqrt3};
  return {fill_uniform, proj};
}

void write_floats_as(Dtype dtype, const float* v, uint64_t n, const std::string& name, ckpt::SafetensorsWriter& w,
                     std::vector<uint8_t>& buf) {
  buf.resize(n * dtype_size(dtype));
  if (dtype == Dtype::F32) {
    for (uint64_t i = 0; i < n; ++i) std::memcpy(&buf[i * 4], &v[i], 4);
  } else {
    for (uint64_t i = 0; i < n; ++i) {
      const uint16_t h = float_to_bf16(v[i]);
      buf[2 * i] = uint8_t(h);
      buf[2 * i + 1] = uint8_t(h >> 8);
    }
  }
  w.write(name, buf);
}

uint64_t rows_per_chunk(uint64_t cols, uint64_t bytes_per_elem, uint64_t multiple) {
  uint64_t r = std::max<uint64_t>(1, kChunkBytes / std::max<uint64_t>(1, cols * bytes_per_elem));
  return std::max(multiple, r / multiple * multiple);
}

// FP4 experts are drawn directly as codes: uniform nibbles have rms 2.93 (sqrt(68.5/8)), and each
// 32-input group's E8M0 scale is 2^floor or 2^ceil of log2(target / 2.93), chosen at random in
// proportion, so the weights average the target std without a float detour.
void generate_fp4(const SynthTensor& t, Rng& rng, ckpt::SafetensorsWriter& w) {
  const uint64_t rows = t.spec.shape[0], cols = t.spec.shape[1], groups = cols / 32;
  const double target = 1.0 / std::sqrt(double(cols));
  const double exact = std::log2(target / 2.9268);
  const double lo = std::floor(exact), frac = exact - lo;
  std::vector<uint8_t> packed, scale;
  const uint64_t band = rows_per_chunk(cols / 2, 1, 1);
  for (uint64_t r0 = 0; r0 < rows; r0 += band) {
    const uint64_t n = std::min(band, rows - r0);
    packed.resize(n * cols / 2);
    for (uint64_t i = 0; i < packed.size(); i += 8) {
      uint64_t bits = rng.next();
      for (uint64_t k = i; k < std::min<uint64_t>(i + 8, packed.size()); ++k, bits >>= 8) packed[k] = uint8_t(bits);
    }
    scale.resize(n * groups);
    for (auto& s : scale) s = uint8_t(127 + int(lo) + (rng.uniform() < frac ? 1 : 0));
    w.write(t.weight.name, packed);
    w.write(t.scale.name, scale);
  }
}

void generate_matrix(const SynthTensor& t, const ValueRule& rule, Rng& rng, ckpt::SafetensorsWriter& w) {
  const uint64_t rows = t.spec.shape[0], cols = t.spec.shape[1];
  std::vector<float> vals;
  std::vector<uint8_t> q, s;
  if (t.weight.dtype == Dtype::F8_E4M3) {
    const uint64_t band = rows_per_chunk(cols, 4, ckpt::kFp8Block);
    for (uint64_t r0 = 0; r0 < rows; r0 += band) {
      const uint64_t n = std::min(band, rows - r0);
      vals.resize(n * cols);
      rule.fill(rng, vals.data(), vals.size(), rule.amplitude);
      q.resize(n * cols);
      s.resize(((n + 127) / 128) * ((cols + 127) / 128));
      ckpt::quantize_fp8_blocks(vals.data(), n, cols, q.data(), s.data());
      w.write(t.weight.name, q);
      w.write(t.scale.name, s);
    }
    return;
  }
  const uint64_t band = rows_per_chunk(cols, 4, 1);
  for (uint64_t r0 = 0; r0 < rows; r0 += band) {
    const uint64_t n = std::min(band, rows - r0);
    vals.resize(n * cols);
    rule.fill(rng, vals.data(), vals.size(), rule.amplitude);
    write_floats_as(t.weight.dtype, vals.data(), vals.size(), t.weight.name, w, q);
  }
}

// tid2eid [vocab, k]: each row k distinct valid experts, rows varied.
void generate_tid2eid(const SynthTensor& t, const Config& c, Rng& rng, ckpt::SafetensorsWriter& w) {
  const uint64_t vocab = t.spec.shape[0], k = t.spec.shape[1];
  std::vector<int64_t> row(k);
  std::vector<uint8_t> buf;
  const uint64_t band = rows_per_chunk(k, 8, 1);
  for (uint64_t r0 = 0; r0 < vocab; r0 += band) {
    const uint64_t n = std::min(band, vocab - r0);
    buf.resize(n * k * 8);
    for (uint64_t r = 0; r < n; ++r) {
      for (uint64_t j = 0; j < k; ++j) {
        int64_t e;
        do {
          e = rng.below(c.n_routed_experts);
        } while (std::find(row.begin(), row.begin() + int64_t(j), e) != row.begin() + int64_t(j));
        row[j] = e;
      }
      std::memcpy(&buf[r * k * 8], row.data(), k * 8);
    }
    w.write(t.weight.name, buf);
  }
}

}  // namespace

SynthTensor plan_tensor(const TensorSpec& spec, const SynthPlan& plan, Spelling spelling) {
  SynthTensor t;
  t.spec = spec;
  t.weight.name = spell(spec.name, spelling);
  t.weight.shape = spec.shape;
  switch (spec.role) {
    case TensorRole::F32: t.weight.dtype = Dtype::F32; return t;
    case TensorRole::I64: t.weight.dtype = Dtype::I64; return t;
    case TensorRole::Bf16: t.weight.dtype = Dtype::BF16; return t;
    case TensorRole::Projection:
    case TensorRole::Expert: break;
  }
  t.format = spec.role == TensorRole::Expert ? plan.expert_format : plan.dense_format;
  const uint64_t rows = spec.shape[0], cols = spec.shape[1];
  t.scale.name = spell(ckpt::scale_name_for(spec.name), spelling);
  t.scale.dtype = Dtype::F8_E8M0;
  switch (t.format) {
    case WeightFormat::Bf16: t.weight.dtype = Dtype::BF16; break;
    case WeightFormat::Fp8:
      t.weight.dtype = Dtype::F8_E4M3;
      t.has_scale = true;
      t.scale.shape = {(rows + 127) / 128, (cols + 127) / 128};
      break;
    case WeightFormat::Fp4:
      t.weight.dtype = Dtype::I8;
      t.weight.shape = {rows, cols / 2};
      t.has_scale = true;
      t.scale.shape = {rows, cols / 32};
      break;
  }
  return t;
}

uint64_t stored_bytes(const SynthTensor& t) {
  uint64_t a = 0, b = 0;
  ckpt::tensor_byte_size(t.weight.shape, t.weight.dtype, a);
  if (t.has_scale) ckpt::tensor_byte_size(t.scale.shape, t.scale.dtype, b);
  return a + b;
}

void generate_tensor(const SynthTensor& t, const Config& c, uint64_t seed, ckpt::SafetensorsWriter& w) {
  Rng rng(seed, t.spec.name);  // keyed by the released name: both spellings get the same values
  if (t.spec.role == TensorRole::I64) return generate_tid2eid(t, c, rng, w);
  if (t.weight.dtype == Dtype::I8) return generate_fp4(t, rng, w);
  const ValueRule rule = rule_for(t.spec);
  if (t.spec.shape.size() == 2) return generate_matrix(t, rule, rng, w);
  std::vector<float> vals(t.spec.shape.empty() ? 1 : t.spec.shape[0]);
  rule.fill(rng, vals.data(), vals.size(), rule.amplitude);
  std::vector<uint8_t> buf;
  write_floats_as(t.weight.dtype, vals.data(), vals.size(), t.weight.name, w, buf);
}

}  // namespace moepage::ds4
