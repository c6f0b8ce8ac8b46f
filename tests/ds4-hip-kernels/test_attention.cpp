// The GPU attention block against forward/attention.cpp on the same random weights and inputs:
// after every step the output, the ring, both compressors' state (slots, previous half, emitted
// entries, counters) and the CSA indexer's picks must match the CPU's. Schedules mix decode
// (S = 1) and batches so the ring wraps and windows close inside a batch, and run past index_topk
// visible entries so the indexer both takes everything and ranks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "deepseek4/cpu/rope.hpp"
#include "deepseek4/cpu/thread_pool.hpp"
#include "deepseek4/forward/attention.hpp"
#include "deepseek4/forward/compressor.hpp"
#include "deepseek4/hip/attention.hpp"
#include "deepseek4/hip/attention_scratch.hpp"
#include "deepseek4/hip/device_arena.hpp"
#include "deepseek4/hip/gemm_policy.hpp"

namespace moepage::ds4 {
namespace {

struct Shape {
  uint32_t D, H, hd, rope, q_lora, groups, o_lora, window, csa_ratio, hca_ratio, index_heads, index_dim, topk;
  int64_t max_context, max_batch;
};

// Small, with widths that are not multiples of a warp.
constexpr Shape kSmall{64, 4, 40, 8, 32, 2, 16, 8, 4, 8, 4, 24, 3, 64, 5};
// A head wider than a block (256 threads) and a wide rope slice.
constexpr Shape kWide{96, 2, 288, 64, 48, 2, 24, 16, 4, 16, 3, 136, 5, 96, 8};

// Prompt-sized batches (more (token, head) items than the split decode path takes): Flash's
// 512-wide head with 16 heads, through the matrix-core kernel where there is one (attend_mma.hpp,
// batches of 16 tokens or more) and through the tiled kernel (eight heads per block on NVIDIA);
// and an odd head count with a head that is not a multiple of four floats (tiled, staged one float
// at a time).
constexpr Shape kPrompt{128, 16, 512, 64, 32, 4, 32, 32, 4, 16, 4, 64, 8, 160, 48};
constexpr Shape kOddHeads{64, 6, 42, 8, 32, 3, 16, 8, 4, 8, 4, 24, 3, 96, 40};
// Flash's 64 indexer heads (of 64 dims here, two key slices) in prompt chunks of 32 tokens or
// more: the register-tiled indexer scores (index_scores.hpp); the single tokens and the
// 8-token batch take the general kernel.
constexpr Shape kIndexerHeads{64, 4, 40, 8, 32, 2, 16, 8, 4, 8, 64, 64, 3, 320, 80};
// Widths the single-token kernels take (F32 rows of whole 128-float groups): a decode step
// gathers its products of xn (wq_a with the KV head, the compressors' four) into few launches, and
// the indexer scores once more than 8 compressed entries exist.
constexpr Shape kGathered{128, 4, 128, 64, 128, 2, 32, 16, 4, 16, 4, 64, 8, 160, 8};

Config make_config(const Shape& s) {
  Config c;
  c.hidden_size = s.D;
  c.num_attention_heads = s.H;
  c.head_dim = s.hd;
  c.qk_rope_head_dim = s.rope;
  c.q_lora_rank = s.q_lora;
  c.o_groups = s.groups;
  c.o_lora_rank = s.o_lora;
  c.sliding_window = s.window;
  c.compress_rate_csa = s.csa_ratio;
  c.compress_rate_hca = s.hca_ratio;
  c.index_n_heads = s.index_heads;
  c.index_head_dim = s.index_dim;
  c.index_topk = s.topk;
  c.rope_main = RopeParams{10000.0, false, 1.0, 0.0, 32.0, 1.0};
  c.rope_compress = RopeParams{160000.0, true, 16.0, 64.0, 32.0, 1.0};
  return c;
}

cpu::RopeSpec spec(const RopeParams& r) {
  return cpu::RopeSpec{r.theta, r.yarn, r.factor, r.original_max_position, r.beta_fast, r.beta_slow};
}

// Random F32 tensors held on the host (the CPU's views) with device copies (the GPU's views).
class TwinTensors {
 public:
  TwinTensors(uint64_t seed, gpu::DeviceArena& arena) : rng_(0x9E3779B97F4A7C15ull ^ seed), arena_(arena) {}

  float uniform() {  // xorshift64*, in [-1, 1)
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return float(double((rng_ * 2685821657736338717ull) >> 11) / double(1ull << 53)) * 2.0f - 1.0f;
  }

  std::vector<float> values(int64_t n, float center, float amplitude) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = center + amplitude * uniform();
    return v;
  }

  float* device_copy(const std::vector<float>& v) {
    float* d = arena_.take<float>(v.size());
    gpu::upload(d, v.data(), v.size() * sizeof(float));
    return d;
  }

  // [rows, cols] with entries of size amplitude / sqrt(cols).
  void matrix(int64_t rows, int64_t cols, float amplitude, cpu::MatRef& host, cpu::MatRef& device) {
    auto& v = keep(values(rows * cols, 0.0f, amplitude / std::sqrt(float(cols))));
    host = cpu::MatRef{Dtype::F32, rows, cols, reinterpret_cast<const std::byte*>(v.data()), nullptr, 0, 0};
    device = host;
    device.data = reinterpret_cast<const std::byte*>(device_copy(v));
  }

  // The same values as matrix() draws, rounded to and stored as bf16 (an encoding the library
  // path takes as stored).
  void matrix_bf16(int64_t rows, int64_t cols, float amplitude, cpu::MatRef& host, cpu::MatRef& device) {
    const std::vector<float> v = values(rows * cols, 0.0f, amplitude / std::sqrt(float(cols)));
    bf16_blobs_.push_back(std::make_unique<std::vector<uint16_t>>(v.size()));
    std::vector<uint16_t>& bits = *bf16_blobs_.back();
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t b = 0;
      std::memcpy(&b, &v[i], 4);
      bits[i] = uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);  // to nearest, ties to even
    }
    host = cpu::MatRef{Dtype::BF16, rows, cols, reinterpret_cast<const std::byte*>(bits.data()), nullptr, 0, 0};
    device = host;
    uint16_t* d = arena_.take<uint16_t>(bits.size());
    gpu::upload(d, bits.data(), bits.size() * sizeof(uint16_t));
    device.data = reinterpret_cast<const std::byte*>(d);
  }

  void vector(int64_t n, float center, float amplitude, std::vector<float>& host, const float*& device) {
    host = values(n, center, amplitude);
    device = device_copy(host);
  }

 private:
  std::vector<float>& keep(std::vector<float> v) {
    blobs_.push_back(std::make_unique<std::vector<float>>(std::move(v)));
    return *blobs_.back();
  }
  uint64_t rng_;
  gpu::DeviceArena& arena_;
  std::vector<std::unique_ptr<std::vector<float>>> blobs_;
  std::vector<std::unique_ptr<std::vector<uint16_t>>> bf16_blobs_;
};

gpu::DeviceRope device_rope(const cpu::Rope& rope, int64_t positions, gpu::DeviceArena& arena) {
  const int32_t half = rope.rope_dim() / 2;
  std::vector<float> cos(size_t(positions * half)), sin(cos.size());
  for (int64_t p = 0; p < positions; ++p) rope.angles(p, cos.data() + p * half, sin.data() + p * half);
  gpu::DeviceRope r;
  float* dc = arena.take<float>(cos.size());
  float* ds = arena.take<float>(sin.size());
  gpu::upload(dc, cos.data(), cos.size() * sizeof(float));
  gpu::upload(ds, sin.data(), sin.size() * sizeof(float));
  r.cos = dc;
  r.sin = ds;
  r.half = half;
  r.positions = positions;
  return r;
}

void twin_compressor(TwinTensors& t, const Config& c, uint32_t width, uint32_t dim, uint32_t ratio,
                     CompressorParams& cp, gpu::GpuCompressorParams& gp) {
  t.matrix(width, c.hidden_size, 1.0f, cp.wkv, gp.wkv);
  t.matrix(width, c.hidden_size, 2.0f, cp.wgate, gp.wgate);
  t.vector(int64_t(ratio) * width, 0.0f, 0.5f, cp.ape, gp.ape);
  t.vector(dim, 1.0f, 0.2f, cp.norm, gp.norm);
  cp.ratio = gp.ratio = ratio;
  cp.dim = gp.dim = dim;
  cp.width = gp.width = width;
  cp.overlap = gp.overlap = width == 2 * dim;
}

// One attention layer of the given kind on both sides, with its state and scratch.
struct TwinLayer {
  Config c;
  int64_t ctx, max_batch, ring_size;
  gpu::DeviceArena arena, pinned{gpu::DeviceArena::Kind::Pinned};
  cpu::Rope rope;
  gpu::DeviceRope grope;
  TwinTensors t;
  LayerParams lp;
  gpu::GpuLayerParams glp;
  LayerState st;
  gpu::GpuLayerState gst;
  Scratch sc;
  std::unique_ptr<gpu::AttentionScratch> gsc;
  cpu::ThreadPool pool{2};
  float *xn_dev, *out_dev;

  // bf16_wo_a: wo_a stored as bf16, so the library path can take it (GemmPolicy::library_min_tokens).
  TwinLayer(const Shape& s, AttnKind kind, uint64_t seed, bool bf16_wo_a = false)
      : c(make_config(s)),
        ctx(s.max_context),
        max_batch(s.max_batch),
        ring_size(std::min<int64_t>(s.max_context, s.window + s.max_batch - 1)),
        rope(spec(kind == AttnKind::Sliding ? c.rope_main : c.rope_compress), int(s.rope)),
        grope(device_rope(rope, s.max_context, arena)),
        t(seed, arena) {
    const int64_t D = c.hidden_size, H = c.num_attention_heads, hd = c.head_dim;
    lp.kind = glp.kind = kind;
    lp.rope = &rope;
    glp.rope = &grope;
    t.matrix(c.q_lora_rank, D, 1.0f, lp.wq_a, glp.wq_a);
    t.vector(c.q_lora_rank, 1.0f, 0.2f, lp.q_norm, glp.q_norm);
    t.matrix(H * hd, c.q_lora_rank, 1.0f, lp.wq_b, glp.wq_b);
    t.matrix(hd, D, 1.0f, lp.wkv, glp.wkv);
    t.vector(hd, 1.0f, 0.2f, lp.kv_norm, glp.kv_norm);
    if (bf16_wo_a) t.matrix_bf16(int64_t(c.o_groups) * c.o_lora_rank, H * hd / c.o_groups, 1.0f, lp.wo_a, glp.wo_a);
    else t.matrix(int64_t(c.o_groups) * c.o_lora_rank, H * hd / c.o_groups, 1.0f, lp.wo_a, glp.wo_a);
    t.matrix(D, int64_t(c.o_groups) * c.o_lora_rank, 1.0f, lp.wo_b, glp.wo_b);
    t.vector(H, 0.0f, 1.0f, lp.sink, glp.sink);

    st.ring.assign(size_t(ring_size * hd), 0.0f);
    gst.ring = arena.take<float>(uint64_t(ring_size * hd));
    int64_t comp_keys = 0, index_entries = 0;
    if (kind != AttnKind::Sliding) {
      const bool csa = kind == AttnKind::CSA;
      const uint32_t ratio = csa ? s.csa_ratio : s.hca_ratio;
      twin_compressor(t, c, csa ? 2 * s.hd : s.hd, s.hd, ratio, lp.comp, glp.comp);
      const int64_t entries = ctx / ratio;
      init_compressor_state(lp.comp, entries, st.comp);
      gpu::init_compressor_state(glp.comp, entries, arena, gst.comp);
      comp_keys = entries;
      if (csa) {
        twin_compressor(t, c, 2 * s.index_dim, s.index_dim, ratio, lp.index_comp, glp.index_comp);
        init_compressor_state(lp.index_comp, entries, st.index_comp);
        gpu::init_compressor_state(glp.index_comp, entries, arena, gst.index_comp);
        t.matrix(int64_t(s.index_heads) * s.index_dim, c.q_lora_rank, 1.0f, lp.index_wq_b, glp.index_wq_b);
        t.matrix(s.index_heads, D, 1.0f, lp.index_weights_proj, glp.index_weights_proj);
        comp_keys = std::min<int64_t>(entries, c.index_topk);
        index_entries = entries;
      }
    }
    sc.allocate(c, max_batch, pool.size(), std::min<int64_t>(c.sliding_window, ctx) + comp_keys, index_entries);
    gpu::GpuModelParams mp;
    mp.layers.push_back(glp);
    gsc = gpu::allocate_attention_scratch(c, mp, max_batch, ctx, arena, pinned);
    xn_dev = arena.take<float>(uint64_t(max_batch * D));
    out_dev = arena.take<float>(uint64_t(max_batch * D));
  }
};

std::vector<float> fetch(const float* device, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  gpu::download(v.data(), device, v.size() * sizeof(float));
  return v;
}

std::vector<int32_t> fetch_ids(const int32_t* device, int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  gpu::download(v.data(), device, v.size() * sizeof(int32_t));
  return v;
}

// Float on the GPU against double accumulation on the CPU: a wrong index, slot or position is
// off by O(1), rounding by ~1e-6.
void expect_close(const std::vector<float>& gpu, const float* cpu, int64_t n, const std::string& what) {
  int64_t worst = -1;
  double worst_ratio = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double err = std::fabs(double(gpu[size_t(i)]) - double(cpu[i]));
    const double ratio = err / (2e-4 + 2e-3 * std::fabs(double(cpu[i])));
    if (!(ratio <= worst_ratio)) {  // also catches NaN
      worst_ratio = ratio;
      worst = i;
    }
  }
  INFO(what << ": worst element " << worst << " gpu " << (worst >= 0 ? gpu[size_t(worst)] : 0.0f) << " cpu "
            << (worst >= 0 ? cpu[worst] : 0.0f));
  CHECK(worst_ratio <= 1.0);
}

void expect_same_compressor(const CompressorState& cs, const gpu::GpuCompressorState& gs, const CompressorParams& p,
                            const std::string& what) {
  CHECK_MESSAGE(gs.n_entries == cs.n_entries, what << " entries");
  CHECK_MESSAGE(gs.has_prev == cs.has_prev, what << " has_prev");
  const int64_t slots = int64_t(p.ratio) * p.width;
  expect_close(fetch(gs.kv, slots), cs.kv.data(), slots, what + " open window kv");
  expect_close(fetch(gs.gate, slots), cs.gate.data(), slots, what + " open window gate+ape");
  if (p.overlap && cs.has_prev) {
    const int64_t prev = int64_t(p.ratio) * p.dim;
    expect_close(fetch(gs.prev_kv, prev), cs.prev_kv.data(), prev, what + " previous Ca kv");
    expect_close(fetch(gs.prev_gate, prev), cs.prev_gate.data(), prev, what + " previous Ca gate");
  }
  const int64_t n = cs.n_entries * p.dim;
  if (n) expect_close(fetch(gs.entries, n), cs.entries.data(), n, what + " emitted entries");
}

// Runs `schedule` (batch sizes, in order) through both sides and compares after every step.
void run_schedule(const Shape& s, AttnKind kind, const std::vector<int64_t>& schedule, uint64_t seed,
                  gpu::GemmPolicy policy = {}) {
  TwinLayer L(s, kind, seed);
  L.glp.gemm = policy;
  const int64_t D = L.c.hidden_size, hd = L.c.head_dim, topk = L.c.index_topk;
  gpu::Stream stream = gpu::create_stream();
  int64_t p0 = 0;
  bool ranked = false;
  for (int64_t S : schedule) {
    REQUIRE(p0 + S <= L.ctx);
    std::ostringstream step;
    step << "positions " << p0 << ".." << p0 + S - 1;
    CAPTURE(step.str());
    const std::vector<float> xn = L.t.values(S * D, 0.0f, 1.0f);
    gpu::upload(L.xn_dev, xn.data(), xn.size() * sizeof(float));
    std::vector<float> out(size_t(S * D));
    attention(L.pool, L.lp, L.c, L.st, L.ring_size, p0, S, xn.data(), L.sc, out.data());
    gpu::attention(L.glp, L.c, L.gst, L.ring_size, p0, S, L.xn_dev, *L.gsc, L.out_dev, stream);
    gpu::synchronize(stream);

    expect_close(fetch(L.gst.ring, L.ring_size * hd), L.st.ring.data(), L.ring_size * hd, "ring");
    if (kind != AttnKind::Sliding) expect_same_compressor(L.st.comp, L.gst.comp, L.lp.comp, "compressor");
    if (kind == AttnKind::CSA) {
      expect_same_compressor(L.st.index_comp, L.gst.index_comp, L.lp.index_comp, "indexer compressor");
      const std::vector<int32_t> n_sel = fetch_ids(L.gsc->n_sel, S);
      const std::vector<int32_t> sel = fetch_ids(L.gsc->sel, S * L.gsc->index_topk);
      for (int64_t t = 0; t < S; ++t) {
        CAPTURE(t);
        REQUIRE(n_sel[size_t(t)] == L.sc.n_sel[size_t(t)]);
        ranked = ranked || (p0 + t + 1) / int64_t(s.csa_ratio) > topk;
        for (int64_t i = 0; i < n_sel[size_t(t)]; ++i)
          CHECK(sel[size_t(t * L.gsc->index_topk + i)] == L.sc.sel[size_t(t * topk + i)]);
      }
    }
    expect_close(fetch(L.out_dev, S * D), out.data(), S * D, "attention output");
    p0 += S;
  }
  // The schedule must have exercised what it claims.
  CHECK(p0 > L.ring_size);
  if (kind == AttnKind::CSA) CHECK(ranked);
  gpu::destroy_stream(stream);
}

std::vector<int64_t> decode_steps(int64_t prompt, int64_t n) {
  std::vector<int64_t> v{prompt};
  v.insert(v.end(), size_t(n), 1);
  return v;
}

constexpr AttnKind kKinds[] = {AttnKind::Sliding, AttnKind::CSA, AttnKind::HCA};
const char* name(AttnKind k) { return k == AttnKind::Sliding ? "sliding" : k == AttnKind::CSA ? "CSA" : "HCA"; }

}  // namespace

TEST_CASE("gpu attention matches the CPU token by token (S = 1)") {
  for (AttnKind kind : kKinds) {
    CAPTURE(name(kind));
    run_schedule(kSmall, kind, decode_steps(1, 40), 11);
  }
}

TEST_CASE("gpu attention matches the CPU token by token with the products of xn gathered (S = 1)") {
  for (AttnKind kind : kKinds) {
    CAPTURE(name(kind));
    run_schedule(kGathered, kind, decode_steps(8, 60), 16);
  }
}

TEST_CASE("gpu attention matches the CPU on batches whose windows close inside the batch (S = 5)") {
  for (AttnKind kind : kKinds) {
    CAPTURE(name(kind));
    run_schedule(kSmall, kind, {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 12);
  }
}

TEST_CASE("gpu attention matches the CPU on mixed prefill and decode") {
  for (AttnKind kind : kKinds) {
    CAPTURE(name(kind));
    run_schedule(kSmall, kind, {3, 5, 1, 1, 2, 5, 1, 4, 5, 1, 1, 1, 5, 3, 1, 5}, 13);
  }
}

TEST_CASE("gpu attention matches the CPU with a head wider than a block and a wide rope slice") {
  for (AttnKind kind : kKinds) {
    CAPTURE(name(kind));
    run_schedule(kWide, kind, {8, 8, 8, 1, 1, 1, 7, 8, 8, 1, 6, 8, 8, 1, 1}, 14);
    run_schedule(kWide, kind, decode_steps(8, 70), 15);
  }
}

TEST_CASE("gpu attention matches the CPU on prompt-sized batches (the matrix-core and tiled kernels)") {
  for (AttnKind kind : kKinds) {
    CAPTURE(name(kind));
    run_schedule(kPrompt, kind, {48, 48, 17, 1, 1, 8}, 16);
    run_schedule(kPrompt, kind, {48, 48, 48, 1, 1, 8}, 16, gpu::GemmPolicy{0, true});  // CUDA cores only
    run_schedule(kOddHeads, kind, {40, 40, 1, 1, 5}, 17);
  }
}

TEST_CASE("gpu prompt attention writing wo_a's parts gives the floats' output bit for bit, and the CPU's") {
  if (!gpu::library_gemm_available()) {
    MESSAGE("this build or device has no library path (NVIDIA sm_80+ only): no parts to write");
    return;
  }
  for (AttnKind kind : kKinds) {
    CAPTURE(name(kind));
    gpu::GemmPolicy parts;
    parts.library_min_tokens = 8;  // wo_a (bf16 here) on the library from 8 tokens
    parts.attention_parts = true;
    gpu::GemmPolicy floats = parts;
    floats.attention_parts = false;
    TwinLayer A(kPrompt, kind, 18, true), B(kPrompt, kind, 18, true);
    A.glp.gemm = parts;
    B.glp.gemm = floats;
    const int64_t D = A.c.hidden_size;
    gpu::Stream stream = gpu::create_stream();
    int64_t p0 = 0;
    for (const int64_t S : {int64_t(48), int64_t(48), int64_t(17), int64_t(1), int64_t(8)}) {
      CAPTURE(p0);
      const std::vector<float> xn = A.t.values(S * D, 0.0f, 1.0f);
      gpu::upload(A.xn_dev, xn.data(), xn.size() * sizeof(float));
      gpu::upload(B.xn_dev, xn.data(), xn.size() * sizeof(float));
      std::vector<float> cpu_out(size_t(S * D));
      attention(A.pool, A.lp, A.c, A.st, A.ring_size, p0, S, xn.data(), A.sc, cpu_out.data());
      gpu::attention(A.glp, A.c, A.gst, A.ring_size, p0, S, A.xn_dev, *A.gsc, A.out_dev, stream);
      gpu::attention(B.glp, B.c, B.gst, B.ring_size, p0, S, B.xn_dev, *B.gsc, B.out_dev, stream);
      gpu::synchronize(stream);
      const std::vector<float> a = fetch(A.out_dev, S * D), b = fetch(B.out_dev, S * D);
      CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
      expect_close(a, cpu_out.data(), S * D, "attention output with wo_a's parts");
      p0 += S;
    }
    gpu::destroy_stream(stream);
  }
}

TEST_CASE("gpu CSA indexer picks match the CPU with 64 heads over prompt chunks (the tiled scores)") {
  // Chunks of 80 and 33 tokens: past the first tile of 64 entries, and a tile cut short.
  run_schedule(kIndexerHeads, AttnKind::CSA, {80, 80, 33, 1, 1, 8, 80}, 18);
}

TEST_CASE("gpu attention refuses positions beyond its scratch and a skipped token") {
  TwinLayer L(kSmall, AttnKind::HCA, 16);
  gpu::Stream stream = gpu::create_stream();
  CHECK_THROWS_AS(gpu::attention(L.glp, L.c, L.gst, L.ring_size, L.ctx, 1, L.xn_dev, *L.gsc, L.out_dev, stream),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      gpu::attention(L.glp, L.c, L.gst, L.ring_size, 0, L.max_batch + 1, L.xn_dev, *L.gsc, L.out_dev, stream),
      std::invalid_argument);
  // The compressor has emitted nothing, so a batch at position 8 (window 1 of ratio 8) skips tokens.
  std::string message;
  try {
    gpu::attention(L.glp, L.c, L.gst, L.ring_size, 8, 1, L.xn_dev, *L.gsc, L.out_dev, stream);
  } catch (const std::logic_error& e) {
    message = e.what();
  }
  CHECK(message.find("tokens skipped") != std::string::npos);
  gpu::synchronize(stream);
  gpu::destroy_stream(stream);
}

}  // namespace moepage::ds4
