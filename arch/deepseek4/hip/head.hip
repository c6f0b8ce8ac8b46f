// The output head on the GPU (head.hpp), the twin of forward/head.cpp.
#include "deepseek4/hip/head.hpp"

#include "deepseek4/hip/ops.hpp"

namespace moepage::ds4::gpu {

void output_head(const GpuModelParams& mp, const Config& c, const float* X, int64_t S, const GpuHcScratch& hs,
                 float* u, float* xn, float* logits, Stream stream) {
  const int64_t D = c.hidden_size;
  hc_head(mp.hc_head, c, X, S, hs, u, stream);
  rms_norm(u, S, D, D, mp.norm, float(c.rms_norm_eps), xn, stream);
  matmul(mp.head, xn, D, logits, c.vocab_size, S, stream);
}

}  // namespace moepage::ds4::gpu
