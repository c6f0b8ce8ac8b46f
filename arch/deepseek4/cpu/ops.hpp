// Small element-wise and reduction kernels of the DeepSeek-V4 forward pass. All take floats
// and reduce in double where a long sum could lose the precision the golden tests need.
#pragma once
#include <cstdint>

namespace moepage::ds4::cpu {

// out = x / sqrt(mean(x^2) + eps) * weight; weight may be null (unweighted RMS norm).
// out may alias x.
void rms_norm(const float* x, int64_t n, const float* weight, double eps, float* out);

// In place, numerically stable (max subtracted first).
void softmax(float* x, int64_t n);

enum class Scoring : uint8_t { SqrtSoftplus, Sigmoid, Softmax };
// Router scores from logits: sqrt(softplus(l)) (softplus = l above 20, as torch), sigmoid(l), or
// softmax over all n.
void router_scores(const float* logits, int64_t n, Scoring scoring, float* scores);

// The k largest of v[0..n), written to out in descending order. Ties go to the lower index, so the
// result is deterministic. torch.topk leaves the order among exactly equal values unspecified; the
// golden fixtures are built so that no tie reaches the k-th place. NaN counts as smaller than
// every number. k <= n.
void top_k(const float* v, int64_t n, int64_t k, int32_t* out);

// SwiGLU with DeepSeek-V4's clamp: silu(min(gate, limit)) * clamp(up, -limit, limit).
void swiglu_clamped(const float* gate, const float* up, int64_t n, float limit, float* out);

// y += a * x
void axpy(float a, const float* x, int64_t n, float* y);

}  // namespace moepage::ds4::cpu
