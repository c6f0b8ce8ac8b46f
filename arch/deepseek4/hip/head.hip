// The output head on the GPU (head.hpp), the twin of forward/head.cpp.
#include "deepseek4/hip/head.hpp"

#include "deepseek4/hip/ops.hpp"

namespace moepage::ds4::gpu {

void output_head(const GpuModelParams& mp, const Config& c, const float* X, int64_t S, const GpuHcScratch& hs,
                 float* u, float* xn, float* logits, Stream stream) {
  HcInput in;
  in.X = X;
  output_head(mp, c, in, S, hs, u, xn, logits, stream);
}

void output_head(const GpuModelParams& mp, const Config& c, const HcInput& in, int64_t S, const GpuHcScratch& hs,
                 float* u, float* xn, float* logits, Stream stream) {
  hc_head(mp.hc_head, c, in, S, hs, u, stream, mp.norm, xn);  // the final norm fused into the collapse
  matmul(mp.head, xn, c.hidden_size, logits, c.vocab_size, S, stream);
}

}  // namespace moepage::ds4::gpu
