#include "deepseek4/forward/expert_source.hpp"

#include <stdexcept>
#include <string>

namespace moepage::ds4 {

uint64_t ExpertLayout::weight_bytes(Dtype dtype, uint64_t rows, uint64_t cols) {
  if (dtype == Dtype::I8) return rows * (cols / 2);  // FP4: two codes per byte
  return rows * cols * dtype_size(dtype);
}

uint64_t ExpertLayout::scale_bytes(Dtype dtype, uint64_t rows, uint64_t cols) {
  if (dtype == Dtype::I8) return rows * (cols / 32);
  if (dtype == Dtype::F8_E4M3) return ((rows + 127) / 128) * ((cols + 127) / 128);
  return 0;
}

ExpertLayout ExpertLayout::packed(uint32_t hidden, uint32_t intermediate, Dtype w13, Dtype w2) {
  ExpertLayout l;
  l.hidden = hidden;
  l.intermediate = intermediate;
  uint64_t at = 0;
  auto place = [&](ExpertPart& part, Dtype dtype, uint64_t rows, uint64_t cols) {
    auto align = [](uint64_t v) { return (v + 63) & ~uint64_t(63); };
    part.dtype = dtype;
    part.offset = at;
    at = align(at + weight_bytes(dtype, rows, cols));
    const uint64_t sb = scale_bytes(dtype, rows, cols);
    part.has_scale = sb > 0;
    part.scale_offset = part.has_scale ? at : 0;
    at = align(at + sb);
  };
  place(l.w1, w13, intermediate, hidden);
  place(l.w3, w13, intermediate, hidden);
  place(l.w2, w2, hidden, intermediate);
  l.slot_bytes = at;
  return l;
}

ResidentExpertSource::ResidentExpertSource(ExpertLayout layout, uint32_t n_layers, uint32_t n_experts)
    : layout_(layout),
      n_layers_(n_layers),
      n_experts_(n_experts),
      bytes_(size_t(layout.slot_bytes) * n_layers * n_experts) {}

std::byte* ResidentExpertSource::slot(uint32_t layer, uint32_t expert) {
  if (layer >= n_layers_ || expert >= n_experts_)
    throw std::out_of_range("resident experts: no slot for layer " + std::to_string(layer) + " expert " +
                            std::to_string(expert));
  return bytes_.data() + (size_t(layer) * n_experts_ + expert) * layout_.slot_bytes;
}

void ResidentExpertSource::acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) {
  for (uint32_t i = 0; i < n; ++i) {
    if (experts[i] < 0) throw std::out_of_range("resident experts: negative expert id");
    slots[i] = slot(layer, uint32_t(experts[i]));
  }
  acquired_ += n;
}

}  // namespace moepage::ds4
