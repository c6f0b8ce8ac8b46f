#include "deepseek4/cpu/ops.hpp"

#include <algorithm>
#include <cmath>

namespace moepage::ds4::cpu {

void rms_norm(const float* x, int64_t n, const float* weight, double eps, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
  const double r = 1.0 / std::sqrt(ss / double(n) + eps);
  if (weight) {
    for (int64_t i = 0; i < n; ++i) out[i] = float(double(x[i]) * r * double(weight[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = float(double(x[i]) * r);
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::max(m, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = std::exp(double(x[i]) - double(m));
    x[i] = float(e);
    sum += e;
  }
  const double inv = 1.0 / sum;
  for (int64_t i = 0; i < n; ++i) x[i] = float(double(x[i]) * inv);
}

void router_scores(const float* logits, int64_t n, Scoring scoring, float* scores) {
  switch (scoring) {
    case Scoring::SqrtSoftplus:
      for (int64_t i = 0; i < n; ++i) {
        const double l = logits[i];
        const double sp = l > 20.0 ? l : std::log1p(std::exp(l));
        scores[i] = float(std::sqrt(sp));
      }
      return;
    case Scoring::Sigmoid:
      for (int64_t i = 0; i < n; ++i) scores[i] = float(1.0 / (1.0 + std::exp(-double(logits[i]))));
      return;
    case Scoring::Softmax:
      std::copy(logits, logits + n, scores);
      softmax(scores, n);
      return;
  }
}

void top_k(const float* v, int64_t n, int64_t k, int32_t* out) {
  // "a ranks before b": larger value first, NaN last, lower index on ties.
  auto before = [v](int32_t a, int32_t b) {
    const float va = v[a], vb = v[b];
    const bool na = std::isnan(va), nb = std::isnan(vb);
    if (na != nb) return nb;
    if (!na && va != vb) return va > vb;
    return a < b;
  };
  // Insertion into a sorted prefix of size <= k: k is small (experts) or the scan is over the
  // indexer's visible entries, where k is at most a few hundred.
  if (k <= 0) return;  // nothing to keep (index_topk 0); out may be empty
  int64_t have = 0;
  for (int32_t i = 0; i < int32_t(n); ++i) {
    if (have == k && !before(i, out[k - 1])) continue;
    int64_t pos = have < k ? have++ : k - 1;
    while (pos > 0 && before(i, out[pos - 1])) {
      out[pos] = out[pos - 1];
      --pos;
    }
    out[pos] = i;
  }
}

void swiglu_clamped(const float* gate, const float* up, int64_t n, float limit, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = std::min(double(gate[i]), double(limit));
    const double u = std::clamp(double(up[i]), -double(limit), double(limit));
    out[i] = float(g / (1.0 + std::exp(-g)) * u);
  }
}

void axpy(float a, const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace moepage::ds4::cpu
