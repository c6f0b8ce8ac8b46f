#include "deepseek4/forward/head.hpp"

#include "deepseek4/cpu/gemm.hpp"
#include "deepseek4/cpu/ops.hpp"
#include "deepseek4/forward/hc.hpp"

namespace moepage::ds4 {

void output_head(cpu::ThreadPool& pool, const ModelParams& mp, const Config& c, const float* X, int64_t S, Scratch& sc,
                 float* logits) {
  const int64_t D = c.hidden_size;
  const HcScratch hs{sc.hc_flat.data(), sc.hc_mixes.data(), sc.hc_pre.data()};
  hc_head(pool, mp.hc_head, c, X, S, hs, sc.u.data());
  for (int64_t s = 0; s < S; ++s)
    cpu::rms_norm(sc.u.data() + s * D, D, mp.norm.data(), c.rms_norm_eps, sc.xn.data() + s * D);
  cpu::matmul(pool, mp.head, sc.xn.data(), D, logits, c.vocab_size, S);
}

}  // namespace moepage::ds4
