#include "deepseek4/hip/device_predictor.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "deepseek4/hip/ops.hpp"

namespace moepage::ds4::gpu {

namespace {

constexpr int64_t kColumnPad = 64;

int64_t padded_columns(uint32_t rank) { return (int64_t(rank) + 1 + kColumnPad - 1) / kColumnPad * kColumnPad; }

cpu::MatRef device_floats(const float* data, int64_t rows, int64_t cols) {
  cpu::MatRef m;
  m.dtype = Dtype::F32;
  m.rows = rows;
  m.cols = cols;
  m.data = reinterpret_cast<const std::byte*>(data);
  return m;
}

}  // namespace

DevicePredictors::DevicePredictors(GpuExpertSource& source, uint32_t n_layers, int64_t d_model, int64_t n_experts,
                                   DeviceArena& device, DeviceArena& pinned)
    : source_(source), d_model_(d_model), n_experts_(n_experts), layers_(n_layers) {
  uint32_t rank = 0;
  std::vector<float> b_host;
  for (uint32_t l = 0; l + 1 < n_layers; ++l) {
    LinearPredictor p;
    if (!source_.linear_predictor(l, p)) continue;
    const std::string where = "ds4 gpu model: the linear predictor after layer " + std::to_string(l);
    if (p.a == nullptr || p.b == nullptr || p.rank == 0) throw std::invalid_argument(where + " has no weights");
    if (int64_t(p.d_model) != d_model_ || int64_t(p.n_experts) != n_experts_)
      throw std::invalid_argument(where + " reads " + std::to_string(p.d_model) + " values and scores " +
                                  std::to_string(p.n_experts) + " experts; the model has hidden size " +
                                  std::to_string(d_model_) + " and " + std::to_string(n_experts_) + " experts");
    if (rank != 0 && p.rank != rank)  // one low-rank buffer with its 1 in one place serves every layer
      throw std::invalid_argument(where + " has rank " + std::to_string(p.rank) + ", an earlier one " +
                                  std::to_string(rank));
    rank = p.rank;
    const int64_t cols = padded_columns(rank);
    float* a = device.take<float>(uint64_t(rank) * uint64_t(d_model_));
    upload(a, p.a, uint64_t(rank) * uint64_t(d_model_) * sizeof(float));
    b_host.assign(size_t(n_experts_ * cols), 0.0f);
    for (int64_t e = 0; e < n_experts_; ++e) {
      std::copy_n(p.b + e * rank, rank, b_host.begin() + e * cols);
      b_host[size_t(e * cols + rank)] = p.bias != nullptr ? p.bias[e] : 0.0f;
    }
    float* b = device.take<float>(b_host.size());
    upload(b, b_host.data(), b_host.size() * sizeof(float));
    layers_[l] = Layer{true, device_floats(a, rank, d_model_), device_floats(b, n_experts_, cols)};
    ++count_;
  }
  if (count_ == 0) return;
  const int64_t cols = padded_columns(rank);
  std::vector<float> low(size_t(cols), 0.0f);
  low[rank] = 1.0f;  // the bias column's factor; a h fills [0, rank) at every call
  low_ = device.take<float>(uint64_t(cols));
  upload(low_, low.data(), low.size() * sizeof(float));
  scores_ = device.take<float>(uint64_t(n_experts_));
  scores_host_ = pinned.take<float>(uint64_t(n_experts_));
}

void DevicePredictors::observe(uint32_t layer, const float* hidden, Stream stream) {
  if (!has(layer)) throw std::logic_error("ds4 gpu model: no device predictor after layer " + std::to_string(layer));
  const Layer& p = layers_[layer];
  matmul(p.a, hidden, d_model_, low_, p.a.rows, 1, stream);
  matmul(p.b, low_, p.b.cols, scores_, n_experts_, 1, stream);
  download_async(scores_host_, scores_, uint64_t(n_experts_) * sizeof(float), stream);
  synchronize(stream);
  source_.observe_scores(layer, scores_host_, uint32_t(n_experts_));
}

}  // namespace moepage::ds4::gpu
