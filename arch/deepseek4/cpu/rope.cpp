#include "deepseek4/cpu/rope.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace moepage::ds4::cpu {

Rope::Rope(const RopeSpec& spec, int rope_dim) : rope_dim_(rope_dim) {
  if (rope_dim <= 0 || rope_dim % 2 != 0 || rope_dim > kMaxRopeDim)
    throw std::invalid_argument("rope: rotated width must be even, positive and at most 1024, got " +
                                std::to_string(rope_dim));
  const int half = rope_dim / 2;
  inv_freq_.resize(size_t(half));
  // pos_freqs = theta ^ (2i / dim), in float32 like the reference.
  std::vector<float> pos_freq(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) pos_freq[size_t(i)] = std::pow(float(spec.theta), float(2 * i) / float(rope_dim));
  if (!spec.yarn) {
    for (int i = 0; i < half; ++i) inv_freq_[size_t(i)] = 1.0f / pos_freq[size_t(i)];
    return;
  }
  // YaRN: the correction range comes from the number of rotations (beta_fast, beta_slow) over
  // the original context, floored/ceiled and clamped to [0, dim - 1].
  auto correction_dim = [&](double rotations) {
    return (rope_dim * std::log(spec.original_max_position / (rotations * 2.0 * std::numbers::pi))) /
           (2.0 * std::log(spec.theta));
  };
  double low = std::max(0.0, std::floor(correction_dim(spec.beta_fast)));
  double high = std::min(double(rope_dim - 1), std::ceil(correction_dim(spec.beta_slow)));
  if (low == high) high += 0.001;
  for (int i = 0; i < half; ++i) {
    const float ramp = std::clamp(float((float(i) - low) / (high - low)), 0.0f, 1.0f);
    const float extrapolation = 1.0f - ramp;
    const float inv_extra = 1.0f / pos_freq[size_t(i)];
    const float inv_inter = 1.0f / (float(spec.factor) * pos_freq[size_t(i)]);
    inv_freq_[size_t(i)] = inv_inter * (1.0f - extrapolation) + inv_extra * extrapolation;
  }
}

void Rope::angles(int64_t position, float* cos, float* sin) const {
  const float p = float(position);
  for (size_t i = 0; i < inv_freq_.size(); ++i) {
    const float a = inv_freq_[i] * p;
    cos[i] = float(std::cos(double(a)));
    sin[i] = float(std::sin(double(a)));
  }
}

void Rope::rotate(float* x, const float* cos, const float* sin, bool inverse) const {
  const int half = rope_dim_ / 2;
  for (int i = 0; i < half; ++i) {
    const float c = cos[i], s = inverse ? -sin[i] : sin[i];
    const float x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = x0 * c - x1 * s;
    x[2 * i + 1] = x1 * c + x0 * s;
  }
}

}  // namespace moepage::ds4::cpu
