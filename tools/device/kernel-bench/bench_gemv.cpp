// The weight products: gpu::matmul on every flash projection shape and encoding (1 and 8 tokens)
// and gpu::moe on one scored layer with 6 routed FP4 experts resident. Weights are spread over
// enough copies that the timed calls stream them from HBM, not from the 50 MB L2.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/hip/device_arena.hpp"
#include "deepseek4/hip/moe.hpp"
#include "deepseek4/hip/moe_scratch.hpp"
#include "deepseek4/hip/ops.hpp"

namespace moepage::bench {
namespace {

using ds4::cpu::MatRef;
namespace gpu = ds4::gpu;

constexpr uint64_t kRotateBytes = uint64_t(256) << 20;  // > 2x L2 of every current GPU
constexpr uint64_t kPatternBytes = uint64_t(16) << 20;

// Random bytes with no e4m3 NaN code (0x7F / 0xFF) and e8m0 scales near 2^-9 when used as
// scales: the values do not change the speed, NaN paths could.
const std::vector<uint8_t>& pattern() {
  static const std::vector<uint8_t> p = [] {
    std::vector<uint8_t> v(kPatternBytes);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (auto& b : v) {
      s ^= s >> 12;
      s ^= s << 25;
      s ^= s >> 27;
      uint8_t x = uint8_t((s * 2685821657736338717ull) >> 56);
      if ((x & 0x7F) == 0x7F) x &= 0xF0;
      b = x;
    }
    return v;
  }();
  return p;
}

void fill(void* device, uint64_t bytes, uint8_t scale_value = 0) {
  if (scale_value) {
    const std::vector<uint8_t> s(bytes, scale_value);
    gpu::upload(device, s.data(), bytes);
    return;
  }
  for (uint64_t off = 0; off < bytes; off += kPatternBytes)
    gpu::upload(static_cast<uint8_t*>(device) + off, pattern().data(), std::min(kPatternBytes, bytes - off));
}

struct Shape {
  const char* name;
  Dtype dtype;
  int64_t rows, cols;     // the stored tensor
  int64_t band_rows = 0;  // > 0: the product reads rows [0, band_rows) of it (wo_a's bands)
};

void bench_matmul(const Options& o, const Shape& sh, int64_t n_tokens) {
  const std::string name = std::string("matmul ") + sh.name + " " + std::string(dtype_name(sh.dtype)) + " " +
                           std::to_string(sh.band_rows ? sh.band_rows : sh.rows) + "x" + std::to_string(sh.cols) +
                           " T=" + std::to_string(n_tokens);
  if (!selected(o, name)) return;
  const int64_t rows = sh.band_rows ? sh.band_rows : sh.rows;
  const uint64_t data_bytes = ds4::ExpertLayout::weight_bytes(sh.dtype, uint64_t(sh.rows), uint64_t(sh.cols));
  const uint64_t scale_bytes = ds4::ExpertLayout::scale_bytes(sh.dtype, uint64_t(sh.rows), uint64_t(sh.cols));
  const uint64_t read_bytes =
      data_bytes * uint64_t(rows) / uint64_t(sh.rows) + scale_bytes * uint64_t(rows) / uint64_t(sh.rows);
  const int copies = int(std::clamp<uint64_t>(kRotateBytes / std::max<uint64_t>(1, read_bytes), 1, 256));

  gpu::DeviceArena arena(gpu::DeviceArena::Kind::Device, uint64_t(256) << 20);
  std::vector<MatRef> mats;
  for (int i = 0; i < copies; ++i) {
    MatRef m{sh.dtype, sh.rows, sh.cols, arena.take<std::byte>(data_bytes),
             scale_bytes ? arena.take<std::byte>(scale_bytes) : nullptr};
    fill(const_cast<std::byte*>(m.data), data_bytes);
    if (scale_bytes) fill(const_cast<std::byte*>(m.scale), scale_bytes, sh.dtype == Dtype::F8_E4M3 ? 118 : 124);
    mats.push_back(sh.band_rows ? m.row_band(0, sh.band_rows) : m);
  }
  std::vector<float> xh(size_t(n_tokens * sh.cols));
  for (size_t i = 0; i < xh.size(); ++i) xh[i] = float(int(i % 17) - 8) / 8.0f;
  float* x = arena.take<float>(xh.size());
  gpu::upload(x, xh.data(), xh.size() * sizeof(float));
  float* y = arena.take<float>(uint64_t(n_tokens * rows));
  const gpu::Stream st = gpu::create_stream();
  const double us =
      time_us(st, o.reps, [&](int i) { gpu::matmul(mats[size_t(i % copies)], x, sh.cols, y, rows, n_tokens, st); });
  gpu::destroy_stream(st);
  report(name, read_bytes, us);
}

// The 8 wo_a bands of attention in one launch: band g reads its own 4096 columns of x.
void bench_wo_a_grouped(const Options& o, int64_t n_tokens) {
  const std::string name = "matmul_grouped wo_a 8 x 1024x4096 F8_E4M3 T=" + std::to_string(n_tokens);
  if (!selected(o, name)) return;
  const int64_t groups = 8, rpg = 1024, cols = 4096, rows = groups * rpg;
  const uint64_t data_bytes = ds4::ExpertLayout::weight_bytes(Dtype::F8_E4M3, uint64_t(rows), uint64_t(cols));
  const uint64_t scale_bytes = ds4::ExpertLayout::scale_bytes(Dtype::F8_E4M3, uint64_t(rows), uint64_t(cols));
  const int copies = int(std::clamp<uint64_t>(kRotateBytes / (data_bytes + scale_bytes), 1, 256));
  gpu::DeviceArena arena(gpu::DeviceArena::Kind::Device, uint64_t(256) << 20);
  std::vector<MatRef> mats;
  for (int i = 0; i < copies; ++i) {
    MatRef m{Dtype::F8_E4M3, rows, cols, arena.take<std::byte>(data_bytes), arena.take<std::byte>(scale_bytes)};
    fill(const_cast<std::byte*>(m.data), data_bytes);
    fill(const_cast<std::byte*>(m.scale), scale_bytes, 118);
    mats.push_back(m);
  }
  const int64_t ld_x = groups * cols;
  std::vector<float> xh(size_t(n_tokens * ld_x));
  for (size_t i = 0; i < xh.size(); ++i) xh[i] = float(int(i % 17) - 8) / 8.0f;
  float* x = arena.take<float>(xh.size());
  gpu::upload(x, xh.data(), xh.size() * sizeof(float));
  float* y = arena.take<float>(uint64_t(n_tokens * rows));
  const gpu::Stream st = gpu::create_stream();
  const double us = time_us(st, o.reps, [&](int i) {
    gpu::matmul_grouped(mats[size_t(i % copies)], x, ld_x, cols, rpg, groups, y, rows, n_tokens, st);
  });
  gpu::destroy_stream(st);
  report(name, data_bytes + scale_bytes, us);
}

// Six device slots per set, several sets so consecutive calls read different bytes; the k
// experts of a call land in the slots of that call's set in order (the routing of a bench input
// does not matter, only that six experts are read).
class RotatingSlots final : public gpu::GpuExpertSource {
 public:
  RotatingSlots(gpu::DeviceArena& arena, uint64_t slot_bytes, int per_set, int sets)
      : slot_bytes_(slot_bytes), per_set_(per_set), sets_(sets) {
    base_ = arena.take<std::byte>(slot_bytes * uint64_t(per_set * sets));
  }
  std::byte* slot(int i) const { return base_ + uint64_t(i) * slot_bytes_; }
  void acquire(uint32_t, const int32_t*, uint32_t n, const std::byte** slots, gpu::Stream) override {
    for (uint32_t i = 0; i < n; ++i) slots[i] = slot(set_ * per_set_ + int(i % uint32_t(per_set_)));
    set_ = (set_ + 1) % sets_;
  }
  uint32_t max_batch() const override { return 256; }

 private:
  uint64_t slot_bytes_;
  int per_set_, sets_, set_ = 0;
  std::byte* base_;
};

// matrix: the routed experts' single-token products on the matrix cores (arch.matrix_single_token).
void bench_moe(const Options& o, bool matrix) {
  const std::string name =
      std::string("moe scored layer, 6 routed FP4 experts, T=1, ") + (matrix ? "matrix cores" : "CUDA cores");
  if (!selected(o, name)) return;
  ds4::Config c;  // flash geometry
  c.num_hidden_layers = 1;
  c.layer_types = {ds4::AttnKind::Sliding};
  c.mlp_layer_types = {ds4::MlpKind::Moe};
  const int64_t D = c.hidden_size, I = c.moe_intermediate_size, E = c.n_routed_experts, k = c.num_experts_per_tok;
  const ds4::ExpertLayout layout = ds4::ExpertLayout::packed(uint32_t(D), uint32_t(I), Dtype::I8, Dtype::I8);

  gpu::DeviceArena arena(gpu::DeviceArena::Kind::Device, uint64_t(256) << 20);
  gpu::DeviceArena pinned(gpu::DeviceArena::Kind::Pinned, uint64_t(16) << 20);
  const int sets = 4;
  RotatingSlots source(arena, layout.slot_bytes, int(k), sets);
  for (int i = 0; i < int(k) * sets; ++i) {
    std::byte* s = source.slot(i);
    fill(s, layout.slot_bytes);
    for (const ds4::ExpertPart* p : {&layout.w1, &layout.w3, &layout.w2}) {
      const bool up = p != &layout.w2;
      fill(s + p->scale_offset, ds4::ExpertLayout::scale_bytes(p->dtype, uint64_t(up ? I : D), uint64_t(up ? D : I)),
           124);
    }
  }
  auto dense = [&](Dtype dt, int64_t rows, int64_t cols) {
    const uint64_t db = ds4::ExpertLayout::weight_bytes(dt, uint64_t(rows), uint64_t(cols));
    const uint64_t sb = ds4::ExpertLayout::scale_bytes(dt, uint64_t(rows), uint64_t(cols));
    MatRef m{dt, rows, cols, arena.take<std::byte>(db), sb ? arena.take<std::byte>(sb) : nullptr};
    fill(const_cast<std::byte*>(m.data), db);
    if (sb) fill(const_cast<std::byte*>(m.scale), sb, 118);
    return m;
  };
  gpu::GpuLayerParams lp;
  lp.mlp = ds4::MlpKind::Moe;
  lp.gemm.single_token = matrix;
  lp.gate = dense(Dtype::BF16, E, D);
  lp.shared_w1 = dense(Dtype::F8_E4M3, I, D);
  lp.shared_w3 = dense(Dtype::F8_E4M3, I, D);
  lp.shared_w2 = dense(Dtype::F8_E4M3, D, I);
  std::vector<float> bias(size_t(E), 0.0f);
  float* bias_d = arena.take<float>(uint64_t(E));
  gpu::upload(bias_d, bias.data(), bias.size() * sizeof(float));
  lp.gate_bias = bias_d;

  std::vector<float> ynh(static_cast<size_t>(D));
  for (size_t i = 0; i < ynh.size(); ++i) ynh[i] = float(int(i % 13) - 6) / 6.0f;
  float* yn = arena.take<float>(uint64_t(D));
  gpu::upload(yn, ynh.data(), ynh.size() * sizeof(float));
  const int32_t token_host = 7;
  int32_t* token = arena.take<int32_t>(1);
  gpu::upload(token, &token_host, sizeof(token_host));
  float* out = arena.take<float>(uint64_t(D));
  auto sc = gpu::allocate_moe_scratch(c, 1, arena, pinned);
  ds4::MoeStats stats;
  const gpu::Stream st = gpu::create_stream();
  const double us = time_us(
      st, o.reps, [&](int) { gpu::moe(lp, c, 0, &token_host, token, 1, yn, source, layout, *sc, out, stats, st); });
  gpu::destroy_stream(st);
  auto part_bytes = [&](const ds4::ExpertPart& p, int64_t rows, int64_t cols) {
    return ds4::ExpertLayout::weight_bytes(p.dtype, uint64_t(rows), uint64_t(cols)) +
           ds4::ExpertLayout::scale_bytes(p.dtype, uint64_t(rows), uint64_t(cols));
  };
  const uint64_t expert_bytes =
      uint64_t(k) * (part_bytes(layout.w1, I, D) + part_bytes(layout.w3, I, D) + part_bytes(layout.w2, D, I));
  auto mat_bytes = [](const MatRef& m) {
    return ds4::ExpertLayout::weight_bytes(m.dtype, uint64_t(m.rows), uint64_t(m.cols)) +
           ds4::ExpertLayout::scale_bytes(m.dtype, uint64_t(m.rows), uint64_t(m.cols));
  };
  const uint64_t dense_bytes =
      mat_bytes(lp.gate) + mat_bytes(lp.shared_w1) + mat_bytes(lp.shared_w3) + mat_bytes(lp.shared_w2);
  report(name + " (routed expert bytes)", expert_bytes, us);
  report(name + " (all weights: + gate, shared FP8)", expert_bytes + dense_bytes, us);
}

void run_gemv(const Options& o) {
  const Shape shapes[] = {
      {"wq_b", Dtype::F8_E4M3, 32768, 1024},   {"wo_a band", Dtype::F8_E4M3, 8192, 4096, 1024},
      {"wo_b", Dtype::F8_E4M3, 4096, 8192},    {"shared w1", Dtype::F8_E4M3, 2048, 4096},
      {"wq_a", Dtype::F8_E4M3, 1024, 4096},    {"wkv", Dtype::F8_E4M3, 512, 4096},
      {"head", Dtype::BF16, 129280, 4096},     {"gate", Dtype::BF16, 256, 4096},
      {"compressor", Dtype::BF16, 1024, 4096}, {"hc fn", Dtype::F32, 24, 16384},
      {"expert w1", Dtype::I8, 2048, 4096},
  };
  for (int64_t n_tokens : {1, 8})
    for (const Shape& sh : shapes) bench_matmul(o, sh, n_tokens);
  for (int64_t n_tokens : {1, 8}) bench_wo_a_grouped(o, n_tokens);
  for (const bool matrix : {false, true}) bench_moe(o, matrix);
}

const Registrar registered_gemv("gemv", run_gemv);

}  // namespace
}  // namespace moepage::bench
