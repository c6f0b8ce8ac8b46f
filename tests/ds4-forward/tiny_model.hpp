// A random DeepSeek-V4 model built in memory for tests: every dense tensor and every routed
// expert, stored in a chosen encoding (F32, BF16, or FP8 dense + FP4 experts as released).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/forward/weights.hpp"
#include "deepseek4/model/config.hpp"

namespace moepage::ds4::test {

// hidden 64, 6 layers (sliding, sliding, CSA, HCA, CSA, HCA), hash routing in layers 0-2,
// hc_mult 4, 16 experts top-4, sliding window 8, CSA ratio 4 / HCA ratio 8, 4 indexer heads with
// index_topk 2, YaRN on the compress rope.
Config tiny_config();

struct Encoding {
  Dtype dense = Dtype::F32;    // matrices other than experts: F32, BF16 or F8_E4M3
  Dtype experts = Dtype::F32;  // F32, BF16, F8_E4M3 or I8 (FP4)
};

class TinyModel {
 public:
  TinyModel(const Config& c, Encoding enc, uint32_t seed);
  const Weights& weights() const { return weights_; }
  const ExpertLayout& layout() const { return layout_; }
  ResidentExpertSource& experts() { return *experts_; }

 private:
  WeightRef matrix(int64_t rows, int64_t cols, Dtype dtype, float amplitude);
  WeightRef vector(std::vector<int64_t> shape, float center, float amplitude);
  WeightRef ids(const std::vector<int64_t>& values, std::vector<int64_t> shape);
  float uniform();

  uint64_t rng_;
  std::vector<std::unique_ptr<std::vector<std::byte>>> blobs_;
  Weights weights_;
  ExpertLayout layout_;
  std::unique_ptr<ResidentExpertSource> experts_;
};

// Encode a row-major [rows, cols] float matrix. FP8: e4m3 codes + e8m0 128x128 block scales;
// I8: FP4 e2m1 pairs (low nibble = even column) + e8m0 scales per 32 columns. `scale` is left
// empty for the plain float encodings.
void encode_matrix(const float* values, int64_t rows, int64_t cols, Dtype dtype, std::vector<std::byte>& data,
                   std::vector<std::byte>& scale);

}  // namespace moepage::ds4::test
