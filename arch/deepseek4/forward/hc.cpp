#include "deepseek4/forward/hc.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "deepseek4/cpu/gemm.hpp"
#include "deepseek4/cpu/ops.hpp"

namespace moepage::ds4 {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// flat[s] = rms-normalised X[s] (all N*D values); mixes[s] = fn @ flat[s].
void project(cpu::ThreadPool& pool, const HcParams& p, const Config& c, const float* X, int64_t S,
             const HcScratch& sc) {
  const int64_t nd = int64_t(c.hc_mult) * c.hidden_size;
  for (int64_t s = 0; s < S; ++s) cpu::rms_norm(X + s * nd, nd, nullptr, c.rms_norm_eps, sc.flat + s * nd);
  cpu::matmul(pool, p.fn, sc.flat, nd, sc.mixes, p.fn.rows, S);
}

// u = sum_i pre[i] * X[i] over the N streams of one token.
void collapse(const float* X, const float* pre, uint32_t n, uint32_t d, float* u) {
  for (uint32_t k = 0; k < d; ++k) {
    double acc = 0;
    for (uint32_t i = 0; i < n; ++i) acc += double(pre[i]) * double(X[size_t(i) * d + k]);
    u[k] = float(acc);
  }
}

}  // namespace

void hc_weights(const float* mixes, const float* base, const float* scale, uint32_t n, uint32_t iters, double eps,
                float* pre, float* post, float* comb) {
  for (uint32_t i = 0; i < n; ++i) {
    pre[i] = float(sigmoid(double(mixes[i]) * scale[0] + base[i]) + eps);
    post[i] = float(2.0 * sigmoid(double(mixes[n + i]) * scale[1] + base[n + i]));
  }
  double m[16 * 16];  // hc_mult is small (4 in every released model); checked by the caller
  for (uint32_t j = 0; j < n; ++j) {
    double mx = -INFINITY;
    for (uint32_t k = 0; k < n; ++k) {
      m[j * n + k] = double(mixes[2 * n + j * n + k]) * scale[2] + base[2 * n + j * n + k];
      mx = std::max(mx, m[j * n + k]);
    }
    double sum = 0;
    for (uint32_t k = 0; k < n; ++k) sum += (m[j * n + k] = std::exp(m[j * n + k] - mx));
    for (uint32_t k = 0; k < n; ++k) m[j * n + k] = m[j * n + k] / sum + eps;
  }
  auto normalise_columns = [&] {
    for (uint32_t k = 0; k < n; ++k) {
      double sum = 0;
      for (uint32_t j = 0; j < n; ++j) sum += m[j * n + k];
      for (uint32_t j = 0; j < n; ++j) m[j * n + k] /= sum + eps;
    }
  };
  auto normalise_rows = [&] {
    for (uint32_t j = 0; j < n; ++j) {
      double sum = 0;
      for (uint32_t k = 0; k < n; ++k) sum += m[j * n + k];
      for (uint32_t k = 0; k < n; ++k) m[j * n + k] /= sum + eps;
    }
  };
  normalise_columns();
  for (uint32_t it = 1; it < iters; ++it) {
    normalise_rows();
    normalise_columns();
  }
  for (uint32_t i = 0; i < n * n; ++i) comb[i] = float(m[i]);
}

void hc_pre(cpu::ThreadPool& pool, const HcParams& p, const Config& c, const float* X, int64_t S, const HcScratch& sc,
            float* post, float* comb, float* u) {
  const uint32_t n = c.hc_mult, d = c.hidden_size;
  const int64_t n_mix = (2 + n) * n;
  project(pool, p, c, X, S, sc);
  for (int64_t s = 0; s < S; ++s) {
    float* pre = sc.pre + s * n;
    hc_weights(sc.mixes + s * n_mix, p.base.data(), p.scale.data(), n, c.hc_sinkhorn_iters, c.hc_eps, pre, post + s * n,
               comb + s * n * n);
    collapse(X + s * n * d, pre, n, d, u + s * d);
  }
}

void hc_post(const float* block_out, const float* X, const float* post, const float* comb, int64_t S, uint32_t n,
             uint32_t d, float* Xout) {
  for (int64_t s = 0; s < S; ++s) {
    const float* x = X + s * n * d;
    const float* cb = comb + s * n * n;
    for (uint32_t k = 0; k < n; ++k) {
      float* out = Xout + (s * n + k) * d;
      const double pk = post[s * n + k];
      for (uint32_t e = 0; e < d; ++e) {
        double acc = pk * double(block_out[s * d + e]);
        for (uint32_t j = 0; j < n; ++j) acc += double(cb[j * n + k]) * double(x[size_t(j) * d + e]);
        out[e] = float(acc);
      }
    }
  }
}

void hc_head(cpu::ThreadPool& pool, const HcParams& p, const Config& c, const float* X, int64_t S, const HcScratch& sc,
             float* h) {
  const uint32_t n = c.hc_mult, d = c.hidden_size;
  project(pool, p, c, X, S, sc);
  for (int64_t s = 0; s < S; ++s) {
    float* pre = sc.pre + s * n;
    for (uint32_t i = 0; i < n; ++i)
      pre[i] = float(sigmoid(double(sc.mixes[s * n + i]) * p.scale[0] + p.base[i]) + c.hc_eps);
    collapse(X + s * n * d, pre, n, d, h + s * d);
  }
}

}  // namespace moepage::ds4
