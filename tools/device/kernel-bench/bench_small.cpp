// Everything of a decode step that is not a weight product: the mHC sites (hc_pre, the fused
// post + weights + collapse/norm that decode runs, hc_post, the head's collapse) and the whole
// attention block at S = 1 on the flash shapes (its projections included: compare with the
// gemv family's matmul lines to see what the block adds around them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench.hpp"
#include "deepseek4/cpu/matref.hpp"
#include "deepseek4/hip/attention.hpp"
#include "deepseek4/hip/attention_scratch.hpp"
#include "deepseek4/hip/device_arena.hpp"
#include "deepseek4/hip/hc.hpp"

namespace moepage::bench {
namespace {

using ds4::cpu::MatRef;
namespace gpu = ds4::gpu;

// Deterministic values in [-amp, amp): the speed does not depend on them.
struct Values {
  uint64_t s = 0x2545F4914F6CDD1Dull;
  float next(float amp) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return float(double((s * 2685821657736338717ull) >> 11) / double(1ull << 53) * 2.0 - 1.0) * amp;
  }
};

class Maker {
 public:
  explicit Maker(gpu::DeviceArena& arena) : arena_(arena) {}

  float* floats(int64_t n, float center, float amp) {
    std::vector<float> h(static_cast<size_t>(n));
    for (float& x : h) x = center + v_.next(amp);
    float* d = arena_.take<float>(h.size());
    gpu::upload(d, h.data(), h.size() * sizeof(float));
    return d;
  }

  // A weight in the checkpoint's encoding (F32, BF16 or FP8 with e8m0 block scales near 2^-9).
  MatRef mat(Dtype dt, int64_t rows, int64_t cols) {
    MatRef m{dt, rows, cols, nullptr, nullptr};
    if (dt == Dtype::F32) {
      m.data = reinterpret_cast<const std::byte*>(floats(rows * cols, 0.0f, 0.05f));
    } else if (dt == Dtype::BF16) {
      std::vector<uint16_t> h(size_t(rows * cols));
      for (auto& b : h) {
        const float f = v_.next(0.05f);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        b = uint16_t(bits >> 16);
      }
      m.data = upload_bytes(h.data(), h.size() * 2);
    } else {  // F8_E4M3
      std::vector<uint8_t> h(size_t(rows * cols));
      for (auto& b : h) {
        uint8_t x = uint8_t(v_.s >> 56);
        v_.next(1.0f);
        if ((x & 0x7F) == 0x7F) x &= 0xF0;  // no NaN codes
        b = x;
      }
      m.data = upload_bytes(h.data(), h.size());
      const std::vector<uint8_t> sc(size_t(((rows + 127) / 128) * ((cols + 127) / 128)), 118);
      m.scale = upload_bytes(sc.data(), sc.size());
    }
    bytes_ += uint64_t(rows * cols) * (dt == Dtype::F32 ? 4 : dt == Dtype::BF16 ? 2 : 1);
    // As the loader would: a malformed bench weight must fail here, not time a wrong path.
    const std::string bad = ds4::cpu::check_matref(m);
    if (!bad.empty()) throw std::runtime_error("bench_small: a made weight is invalid: " + bad);
    return m;
  }
  uint64_t weight_bytes() const { return bytes_; }

 private:
  const std::byte* upload_bytes(const void* h, uint64_t n) {
    std::byte* d = arena_.take<std::byte>(n);
    gpu::upload(d, h, n);
    return d;
  }
  gpu::DeviceArena& arena_;
  Values v_;
  uint64_t bytes_ = 0;
};

ds4::Config flash_config() {
  ds4::Config c;  // the defaults are the flash geometry
  c.num_hidden_layers = 1;
  c.layer_types = {ds4::AttnKind::Sliding};
  c.mlp_layer_types = {ds4::MlpKind::Moe};
  return c;
}

void bench_hc(const Options& o, int64_t S) {
  const ds4::Config c = flash_config();
  const int64_t N = c.hc_mult, D = c.hidden_size, n_mix = (2 + N) * N;
  const std::string t = " N" + std::to_string(N) + " D" + std::to_string(D) + " T=" + std::to_string(S);
  gpu::DeviceArena arena(gpu::DeviceArena::Kind::Device, uint64_t(64) << 20);
  Maker mk(arena);
  gpu::GpuHcParams site{mk.mat(Dtype::F32, n_mix, N * D), mk.floats(n_mix, 0.0f, 0.5f), mk.floats(3, 1.0f, 0.2f)};
  gpu::GpuHcParams head{mk.mat(Dtype::F32, N, N * D), mk.floats(N, 0.0f, 0.5f), mk.floats(1, 1.0f, 0.2f)};
  const uint64_t site_bytes = uint64_t(n_mix * N * D * 4), head_bytes = uint64_t(N * N * D * 4);
  float* X = mk.floats(S * N * D, 0.0f, 2.0f);
  float* X2 = mk.floats(S * N * D, 0.0f, 2.0f);
  float* block_out = mk.floats(S * D, 0.0f, 1.0f);
  float* norm = mk.floats(D, 1.0f, 0.1f);
  float *post[2], *comb[2];
  for (int i = 0; i < 2; ++i) {
    post[i] = mk.floats(S * N, 1.0f, 0.5f);
    comb[i] = mk.floats(S * N * N, 0.25f, 0.1f);
  }
  float* u = arena.take<float>(uint64_t(S * D));
  float* xn = arena.take<float>(uint64_t(S * D));
  float* mean = arena.take<float>(uint64_t(D));
  const gpu::GpuHcScratch hs = gpu::allocate_hc_scratch(c, S, arena);
  const gpu::Stream st = gpu::create_stream();

  std::string name = "hc_pre (weights + collapse)" + t;
  if (selected(o, name))
    report(name, site_bytes,
           time_us(st, o.reps, [&](int) { gpu::hc_pre(site, c, X, S, hs, post[0], comb[0], u, st); }));
  name = "hc site as decode runs it (post + weights, collapse+norm)" + t;
  if (selected(o, name))
    report(name, site_bytes, time_us(st, o.reps, [&](int i) {
             gpu::HcInput in;
             in.X = X;
             in.block_out = block_out;
             in.post = post[i & 1];
             in.comb = comb[i & 1];
             in.Xout = X2;
             in.last_mean = mean;
             gpu::hc_site(site, c, in, S, hs, post[(i + 1) & 1], comb[(i + 1) & 1], norm, xn, st);
           }));
  name = "hc_post alone" + t;
  if (selected(o, name))
    report(name, 0, time_us(st, o.reps, [&](int) {
             gpu::hc_post(block_out, X, post[0], comb[0], S, uint32_t(N), uint32_t(D), X2, st);
           }));
  name = "hc_head + final norm" + t;
  if (selected(o, name))
    report(name, head_bytes, time_us(st, o.reps, [&](int) { gpu::hc_head(head, c, X, S, hs, u, st, norm, xn); }));
  gpu::destroy_stream(st);
}

// cos/sin of real rope angles for `positions` positions.
gpu::DeviceRope rope_table(const ds4::Config& c, int64_t positions, gpu::DeviceArena& arena) {
  const int32_t half = int32_t(c.qk_rope_head_dim / 2);
  std::vector<float> cs(size_t(positions * half)), sn(cs.size());
  for (int64_t p = 0; p < positions; ++p)
    for (int32_t i = 0; i < half; ++i) {
      const double a = double(p) * std::pow(10000.0, -2.0 * i / double(2 * half));
      cs[size_t(p * half + i)] = float(std::cos(a));
      sn[size_t(p * half + i)] = float(std::sin(a));
    }
  float* dc = arena.take<float>(cs.size());
  float* ds = arena.take<float>(sn.size());
  gpu::upload(dc, cs.data(), cs.size() * sizeof(float));
  gpu::upload(ds, sn.data(), sn.size() * sizeof(float));
  return gpu::DeviceRope{dc, ds, half, positions};
}

void compressor(Maker& mk, const ds4::Config& c, uint32_t ratio, uint32_t dim, bool overlap,
                gpu::GpuCompressorParams& p) {
  p.ratio = ratio;
  p.dim = dim;
  p.overlap = overlap;
  p.width = overlap ? 2 * dim : dim;
  p.wkv = mk.mat(Dtype::BF16, p.width, c.hidden_size);
  p.wgate = mk.mat(Dtype::BF16, p.width, c.hidden_size);
  p.ape = mk.floats(int64_t(ratio) * p.width, 0.0f, 0.5f);
  p.norm = mk.floats(dim, 1.0f, 0.1f);
}

// A compressor state as if p0 positions had gone by (entries filled with values).
void warm_state(Maker& mk, const gpu::GpuCompressorParams& p, int64_t max_entries, int64_t p0, gpu::DeviceArena& arena,
                gpu::GpuCompressorState& s) {
  gpu::init_compressor_state(p, max_entries, arena, s);
  const float* e = mk.floats(max_entries * p.dim, 0.0f, 1.0f);
  s.entries = const_cast<float*>(e);
  s.n_entries = p0 / p.ratio;
  s.has_prev = p.overlap && s.n_entries > 0;
}

void bench_attention(const Options& o, ds4::AttnKind kind, int64_t p0) {
  const char* kind_name = kind == ds4::AttnKind::Sliding ? "sliding" : kind == ds4::AttnKind::HCA ? "HCA" : "CSA";
  const std::string name =
      std::string("attention S=1 ") + kind_name + " position " + std::to_string(p0) + " (incl. projections)";
  if (!selected(o, name)) return;
  ds4::Config c = flash_config();
  c.layer_types = {kind};
  const int64_t D = c.hidden_size, H = c.num_attention_heads, hd = c.head_dim, ctx = 8192;
  gpu::DeviceArena arena(gpu::DeviceArena::Kind::Device, uint64_t(256) << 20);
  gpu::DeviceArena pinned(gpu::DeviceArena::Kind::Pinned, uint64_t(1) << 20);
  Maker mk(arena);
  gpu::GpuModelParams mp;
  mp.rope_main = rope_table(c, ctx, arena);
  gpu::GpuLayerParams lp;
  lp.kind = kind;
  lp.rope = &mp.rope_main;
  lp.q_norm = mk.floats(c.q_lora_rank, 1.0f, 0.1f);
  lp.kv_norm = mk.floats(hd, 1.0f, 0.1f);
  lp.sink = mk.floats(H, 0.0f, 1.0f);
  lp.wq_a = mk.mat(Dtype::F8_E4M3, c.q_lora_rank, D);
  lp.wq_b = mk.mat(Dtype::F8_E4M3, H * hd, c.q_lora_rank);
  lp.wkv = mk.mat(Dtype::F8_E4M3, hd, D);
  lp.wo_a = mk.mat(Dtype::F8_E4M3, int64_t(c.o_groups) * c.o_lora_rank, H * hd / c.o_groups);
  lp.wo_b = mk.mat(Dtype::F8_E4M3, D, int64_t(c.o_groups) * c.o_lora_rank);
  const bool csa = kind == ds4::AttnKind::CSA;
  if (kind != ds4::AttnKind::Sliding)
    compressor(mk, c, csa ? c.compress_rate_csa : c.compress_rate_hca, uint32_t(hd), csa, lp.comp);
  if (csa) {
    compressor(mk, c, c.compress_rate_csa, c.index_head_dim, true, lp.index_comp);
    lp.index_wq_b = mk.mat(Dtype::BF16, int64_t(c.index_n_heads) * c.index_head_dim, c.q_lora_rank);
    lp.index_weights_proj = mk.mat(Dtype::BF16, c.index_n_heads, D);
  }
  mp.layers = {lp};
  const int64_t ring_size = std::min<int64_t>(ctx, c.sliding_window);
  gpu::GpuLayerState st;
  st.ring = mk.floats(ring_size * hd, 0.0f, 1.0f);
  if (kind != ds4::AttnKind::Sliding) warm_state(mk, lp.comp, ctx / lp.comp.ratio, p0, arena, st.comp);
  if (csa) warm_state(mk, lp.index_comp, ctx / lp.index_comp.ratio, p0, arena, st.index_comp);
  auto sc = gpu::allocate_attention_scratch(c, mp, 1, ctx, arena, pinned);
  const float* xn = mk.floats(D, 0.0f, 1.0f);
  float* out = arena.take<float>(uint64_t(D));
  // p0 closes no window, so every call repeats the same step on the same state.
  if (kind != ds4::AttnKind::Sliding && (p0 + 1) % lp.comp.ratio == 0) return;
  const gpu::Stream s = gpu::create_stream();
  const double us = time_us(s, o.reps, [&](int) { gpu::attention(lp, c, st, ring_size, p0, 1, xn, *sc, out, s); });
  gpu::destroy_stream(s);
  report(name, mk.weight_bytes(), us);
}

void run_small(const Options& o) {
  for (int64_t S : {1, 8}) bench_hc(o, S);
  for (ds4::AttnKind k : {ds4::AttnKind::Sliding, ds4::AttnKind::HCA, ds4::AttnKind::CSA}) bench_attention(o, k, 1001);
  bench_attention(o, ds4::AttnKind::CSA, 4097);  // 1024 visible indexer entries > top-k 512: scored
}

const Registrar registered_small("small", run_small);

}  // namespace
}  // namespace moepage::bench
