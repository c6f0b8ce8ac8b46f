// The operands of the routed experts' matrix-core products on the GPU (prefill), the profile's
// arch.matrix_expert_precision. Plain C++: the model's options carry it to the GPU tier.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace moepage::ds4 {

// Fp16: FP4 weights exactly in fp16 (an e2m1 code times its power-of-two scale, scales up to 2^13)
// and x rounded once to fp16 (about 2^-12 relative): one matrix instruction per product. FP8 and
// BF16 experts take SplitBf16 instead. SplitBf16: x as two bf16 parts (about 2^-17 relative),
// twice the instructions. Bf16: one bf16 part (about 2^-9), which flips router near ties in later
// layers (bench/results/2026-12-04-split-experts.md).
enum class ExpertPrecision : uint8_t { Fp16, SplitBf16, Bf16 };

// The profile's spelling: "fp16", "split-bf16", "bf16".
constexpr std::string_view expert_precision_name(ExpertPrecision p) {
  return p == ExpertPrecision::Fp16 ? "fp16" : p == ExpertPrecision::SplitBf16 ? "split-bf16" : "bf16";
}
constexpr std::optional<ExpertPrecision> parse_expert_precision(std::string_view s) {
  for (ExpertPrecision p : {ExpertPrecision::Fp16, ExpertPrecision::SplitBf16, ExpertPrecision::Bf16})
    if (s == expert_precision_name(p)) return p;
  return std::nullopt;
}

// Whether one fp16 part holds every x of a layer's routed-expert products, so Fp16 may serve it
// (else SplitBf16 does): w1 and w3 read the block's RMS-normed state, whose entries are at most
// sqrt(hidden) times the norm weight's largest magnitude, and w2 the clamped SwiGLU, at most
// limit^2 (no clamp, limit <= 0: unbounded). fp16 turns anything past 65504 into infinity.
inline bool fp16_holds_expert_inputs(const float* norm, size_t hidden, double swiglu_limit) {
  constexpr double kHalfMax = 65504.0;
  if (!(swiglu_limit > 0) || swiglu_limit * swiglu_limit >= kHalfMax) return false;
  double largest = 0;
  for (size_t i = 0; i < hidden; ++i) {
    const double v = std::fabs(double(norm[i]));
    if (std::isnan(v)) return false;
    largest = v > largest ? v : largest;
  }
  return std::isfinite(largest) && std::sqrt(double(hidden)) * largest < kHalfMax;
}

}  // namespace moepage::ds4
