// upload_params: the CPU ModelParams copied into device memory, matrix by matrix, in the
// checkpoint's own encoding (the GPU kernels decode on the fly, so nothing is dequantized here).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/hip/device_params.hpp"

namespace moepage::ds4::gpu {
namespace {

// Copies a matrix's stored bytes (the whole stored tensor, so a row band of it stays addressable:
// wo_a is uploaded once and the attention block takes its group bands on the device).
cpu::MatRef upload_matrix(const cpu::MatRef& m, DeviceArena& arena) {
  cpu::MatRef out = m;
  if (m.data == nullptr) return out;
  const uint64_t rows = uint64_t(m.stored_rows()), cols = uint64_t(m.cols);
  const uint64_t weight = ExpertLayout::weight_bytes(m.dtype, rows, cols);
  auto* data = static_cast<std::byte*>(arena.take_bytes(weight));
  upload(data, m.data, weight);
  out.data = data;
  if (m.scale != nullptr) {
    const uint64_t scale = ExpertLayout::scale_bytes(m.dtype, rows, cols);
    auto* s = static_cast<std::byte*>(arena.take_bytes(scale));
    upload(s, m.scale, scale);
    out.scale = s;
  }
  return out;
}

template <class T>
const T* upload_vector(const std::vector<T>& v, DeviceArena& arena) {
  if (v.empty()) return nullptr;
  T* d = arena.take<T>(v.size());
  upload(d, v.data(), v.size() * sizeof(T));
  return d;
}

GpuHcParams upload_hc(const HcParams& p, DeviceArena& arena) {
  return GpuHcParams{upload_matrix(p.fn, arena), upload_vector(p.base, arena), upload_vector(p.scale, arena)};
}

GpuCompressorParams upload_compressor(const CompressorParams& p, DeviceArena& arena) {
  GpuCompressorParams g;
  g.wkv = upload_matrix(p.wkv, arena);
  g.wgate = upload_matrix(p.wgate, arena);
  g.ape = upload_vector(p.ape, arena);
  g.norm = upload_vector(p.norm, arena);
  g.ratio = p.ratio;
  g.dim = p.dim;
  g.width = p.width;
  g.overlap = p.overlap;
  return g;
}

// The angles of positions [0, positions) from the CPU rope itself, so both backends rotate by
// bit-identical angles. Compressor entries rotate at w * ratio, which is below max_context too.
DeviceRope upload_rope(const cpu::Rope& rope, int64_t positions, DeviceArena& arena) {
  DeviceRope r;
  r.half = rope.rope_dim() / 2;
  r.positions = positions;
  std::vector<float> cos(size_t(positions) * size_t(r.half)), sin(cos.size());
  for (int64_t p = 0; p < positions; ++p) rope.angles(p, cos.data() + p * r.half, sin.data() + p * r.half);
  r.cos = upload_vector(cos, arena);
  r.sin = upload_vector(sin, arena);
  return r;
}

}  // namespace

GpuModelParams upload_params(const ModelParams& p, const Config& c, const cpu::Rope& rope_main,
                             const cpu::Rope& rope_compress, int64_t max_context, DeviceArena& arena) {
  if (p.layers.size() != c.num_hidden_layers)
    throw std::invalid_argument("ds4 gpu upload: " + std::to_string(p.layers.size()) +
                                " prepared layers, the config has " + std::to_string(c.num_hidden_layers));
  if (max_context < 1)
    throw std::invalid_argument("ds4 gpu upload: max_context must be positive, got " + std::to_string(max_context));
  const uint64_t taken_before = arena.bytes_taken();
  // NRVO keeps `g` where the caller receives it, so the layers' rope pointers stay valid; a
  // caller that moves the result re-points them (GpuModel does).
  GpuModelParams g;
  g.embed = upload_matrix(p.embed, arena);
  g.head = upload_matrix(p.head, arena);
  g.norm = upload_vector(p.norm, arena);
  g.hc_head = upload_hc(p.hc_head, arena);
  g.rope_main = upload_rope(rope_main, max_context, arena);
  g.rope_compress = upload_rope(rope_compress, max_context, arena);
  g.layers.reserve(p.layers.size());
  for (uint32_t l = 0; l < p.layers.size(); ++l) {
    const LayerParams& lp = p.layers[l];
    GpuLayerParams gl;
    gl.kind = lp.kind;
    gl.mlp = lp.mlp;
    gl.rope = lp.kind == AttnKind::Sliding ? &g.rope_main : &g.rope_compress;
    gl.hc_attn = upload_hc(lp.hc_attn, arena);
    gl.hc_ffn = upload_hc(lp.hc_ffn, arena);
    gl.attn_norm = upload_vector(lp.attn_norm, arena);
    gl.ffn_norm = upload_vector(lp.ffn_norm, arena);
    gl.q_norm = upload_vector(lp.q_norm, arena);
    gl.kv_norm = upload_vector(lp.kv_norm, arena);
    gl.sink = upload_vector(lp.sink, arena);
    gl.wq_a = upload_matrix(lp.wq_a, arena);
    gl.wq_b = upload_matrix(lp.wq_b, arena);
    gl.wkv = upload_matrix(lp.wkv, arena);
    gl.wo_a = upload_matrix(lp.wo_a, arena);
    gl.wo_b = upload_matrix(lp.wo_b, arena);
    if (lp.kind != AttnKind::Sliding) gl.comp = upload_compressor(lp.comp, arena);
    if (lp.kind == AttnKind::CSA) {
      gl.index_comp = upload_compressor(lp.index_comp, arena);
      gl.index_wq_b = upload_matrix(lp.index_wq_b, arena);
      gl.index_weights_proj = upload_matrix(lp.index_weights_proj, arena);
    }
    gl.gate = upload_matrix(lp.gate, arena);
    gl.gate_bias = upload_vector(lp.gate_bias, arena);
    gl.tid2eid = upload_vector(lp.tid2eid, arena);
    gl.tid2eid_host = lp.tid2eid.empty() ? nullptr : lp.tid2eid.data();
    gl.shared_w1 = upload_matrix(lp.shared_w1, arena);
    gl.shared_w2 = upload_matrix(lp.shared_w2, arena);
    gl.shared_w3 = upload_matrix(lp.shared_w3, arena);
    g.layers.push_back(gl);
  }
  g.device_bytes = arena.bytes_taken() - taken_before;
  return g;
}

}  // namespace moepage::ds4::gpu
