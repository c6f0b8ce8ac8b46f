// Interleaved partial RoPE as DeepSeek-V4 uses it: channels (2i, 2i+1) of the trailing rope slice
// of a head form one rotating pair with frequency inv_freq[i]. The compress rope blends the YaRN
// interpolated frequencies in with a linear ramp and keeps amplitude 1 (no mscale).
//
// Frequencies and angles are computed in float32 exactly as Hugging Face's rotary embedding does
// (it casts inv_freq and positions to float32 even for a float64 model), so the golden references
// and this code rotate by the same angles.
#pragma once
#include <cstdint>
#include <vector>

namespace moepage::ds4::cpu {

// The widest rotated slice supported; callers keep cos/sin of kMaxRopeDim/2 angles on the stack.
constexpr int kMaxRopeDim = 1024;

struct RopeSpec {
  double theta = 10000.0;
  bool yarn = false;
  double factor = 1.0;
  double original_max_position = 0.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
};

class Rope {
 public:
  // rope_dim: rotated channels per head (even, at most kMaxRopeDim).
  Rope(const RopeSpec& spec, int rope_dim);
  int rope_dim() const { return rope_dim_; }
  const std::vector<float>& inv_freq() const { return inv_freq_; }

  // cos/sin of the rope_dim/2 angles at `position`.
  void angles(int64_t position, float* cos, float* sin) const;
  // Rotate the rope_dim floats at x (the trailing slice of a head) by +angle, or by -angle when
  // inverse is set (undoing a rotation at the same position).
  void rotate(float* x, const float* cos, const float* sin, bool inverse) const;

 private:
  int rope_dim_;
  std::vector<float> inv_freq_;
};

}  // namespace moepage::ds4::cpu
