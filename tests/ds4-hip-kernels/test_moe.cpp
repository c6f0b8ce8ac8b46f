// Routing and the MoE block on the GPU against forward/moe.cpp: every scoring function, hash and
// scored layers, every expert encoding, experts served in one band or in several through slots
// that move, and the pointer table uploaded only when a slot changed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "deepseek4/forward/moe.hpp"
#include "deepseek4/hip/moe.hpp"
#include "deepseek4/hip/moe_route.hpp"
#include "deepseek4/hip/moe_scratch.hpp"
#include "kernel_test_support.hpp"
#include "moe_test_support.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::gpu::test;

namespace {

// Every expert of every layer in device memory, each in its own fixed slot.
class ResidentDeviceExperts final : public gpu::GpuExpertSource {
 public:
  ResidentDeviceExperts(ResidentExpertSource& host, gpu::test::Device& d, uint32_t layers, uint32_t experts)
      : experts_(experts), slot_bytes_(host.layout().slot_bytes) {
    base_ = d.arena().take<std::byte>(slot_bytes_ * layers * experts);
    for (uint32_t l = 0; l < layers; ++l)
      for (uint32_t e = 0; e < experts; ++e) gpu::upload(slot_ptr(l, e), host.slot(l, e), slot_bytes_);
    d.fence();
  }
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, gpu::Stream) override {
    for (uint32_t i = 0; i < n; ++i) slots[i] = slot_ptr(layer, uint32_t(experts[i]));
    ++calls;
  }
  uint32_t max_batch() const override { return experts_; }
  int calls = 0;

 private:
  std::byte* slot_ptr(uint32_t l, uint32_t e) const { return base_ + (uint64_t(l) * experts_ + e) * slot_bytes_; }
  uint32_t experts_;
  uint64_t slot_bytes_;
  std::byte* base_;
};

// A pager in miniature: `n` device slots refilled on every acquire (slot i gets experts[i]), so
// slot pointers move between bands and a stale table entry would read another expert.
class FewDeviceSlots final : public gpu::GpuExpertSource {
 public:
  FewDeviceSlots(ResidentExpertSource& host, gpu::test::Device& d, uint32_t n)
      : host_(host), dev_(d), n_(n), slot_bytes_(host.layout().slot_bytes) {
    base_ = d.arena().take<std::byte>(slot_bytes_ * n);
  }
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, gpu::Stream) override {
    REQUIRE(n <= n_);
    // Rotate which slot serves which position so pointers change from one band to the next.
    for (uint32_t i = 0; i < n; ++i) {
      std::byte* slot = base_ + uint64_t((i + rotation_) % n_) * slot_bytes_;
      gpu::upload(slot, host_.slot(layer, uint32_t(experts[i])), slot_bytes_);
      slots[i] = slot;
    }
    dev_.fence();
    ++rotation_;
  }
  uint32_t max_batch() const override { return n_; }

 private:
  ResidentExpertSource& host_;
  gpu::test::Device& dev_;
  uint32_t n_;
  uint64_t slot_bytes_;
  std::byte* base_;
  uint32_t rotation_ = 0;
};

// The CPU reference with the same band width as the GPU run.
class BandedCpuSource final : public ExpertSource {
 public:
  BandedCpuSource(ResidentExpertSource& r, uint32_t band) : r_(r), band_(band) {}
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) override {
    r_.acquire(layer, experts, n, slots);
  }
  uint32_t max_batch() const override { return band_; }

 private:
  ResidentExpertSource& r_;
  uint32_t band_;
};

std::string scoring_name(ScoringFunc f) {
  return f == ScoringFunc::Sigmoid ? "sigmoid" : f == ScoringFunc::Softmax ? "softmax" : "sqrtsoftplus";
}

}  // namespace

TEST_CASE("gpu route matches route_token for every scoring function, hash and scored") {
  uint64_t seed = 100;
  // E 16: the tiny models; 40: the last lanes own fewer experts; 256/6: Flash's router; 300: past
  // the register top-k (8 experts a lane on 32-wide warps), the insertion sort.
  const std::pair<int64_t, int64_t> shapes[] = {{16, 4}, {40, 6}, {256, 6}, {300, 6}};
  for (const auto& [n_experts, top_k] : shapes)
    for (ScoringFunc scoring : {ScoringFunc::SqrtSoftplus, ScoringFunc::Sigmoid, ScoringFunc::Softmax}) {
      for (MlpKind kind : {MlpKind::HashMoe, MlpKind::Moe}) {
        Rng rng(seed++);
        gpu::test::Device dev;
        Config c = moe_config(scoring);
        c.n_routed_experts = uint32_t(n_experts);
        c.num_experts_per_tok = uint32_t(top_k);
        MoeLayer layer(rng, dev, c, kind);
        const int64_t S = 7, E = n_experts, k = top_k;
        layer.cpu.gate_bias[size_t(E - 2)] = layer.cpu.gate_bias[1];  // experts 1 and E-2 can tie exactly
        layer.dev.gate_bias = dev.put(layer.cpu.gate_bias);
        // Logits past 20 take softplus's linear branch.
        std::vector<float> logits = rng.floats(size_t(S * E), -6.0f, 6.0f);
        logits[3] = 25.0f;
        // Ties: token 1 scores every expert alike (its biased order is the bias's), token 2 scores
        // experts 1 and E-2 (equal biases) alike and best: an exact tie, the lower index first.
        std::fill_n(logits.begin() + E, E, 1.25f);
        logits[size_t(2 * E + 1)] = logits[size_t(2 * E + E - 2)] = 30.0f;
        std::vector<int32_t> tokens(static_cast<size_t>(S));
        for (auto& t : tokens) t = rng.below(int32_t(c.vocab_size));
        std::vector<int32_t> want_idx(size_t(S * k));
        std::vector<float> want_w(size_t(S * k)), scores(static_cast<size_t>(E)), biased(static_cast<size_t>(E));
        for (int64_t s = 0; s < S; ++s)
          route_token(layer.cpu, c, tokens[size_t(s)], logits.data() + s * E, scores.data(), biased.data(),
                      want_idx.data() + s * k, want_w.data() + s * k);
        int32_t* idx = dev.zeros<int32_t>(uint64_t(S * k));
        float* w = dev.zeros<float>(uint64_t(S * k));
        gpu::route(layer.dev, c, dev.put(tokens), S, dev.put(logits), idx, w, dev.stream());
        const std::string what = "route " + scoring_name(scoring) + (kind == MlpKind::HashMoe ? " hash" : " scored") +
                                 " S 7 E " + std::to_string(E) + " k " + std::to_string(k);
        INFO(what);
        CHECK(dev.get(idx, uint64_t(S * k)) == want_idx);
        check_close(what + " weights", dev.get(w, uint64_t(S * k)), want_w, 1e-6);
      }
    }
}

TEST_CASE("gpu gate_and_route for one token: the gate's logits and route_token's choice, in one launch") {
  // The decode router in one launch (the block finishing last routes): its logits against
  // cpu::matmul, its ids and weights against route_token on those same logits (bit-exact ids),
  // twice per layer so the second launch finds its ticket back at zero. Flash's 256 x 4096 gate;
  // 64/40 over 256 BF16 columns: a one-warp block choosing more experts than it has threads.
  uint64_t seed = 1900;
  const std::tuple<int64_t, int64_t, int64_t> shapes[] = {{16, 4, 256}, {40, 6, 1024}, {256, 6, 4096}, {64, 40, 256}};
  for (const auto& [n_experts, top_k, hidden] : shapes)
    for (MlpKind kind : {MlpKind::HashMoe, MlpKind::Moe}) {
      Rng rng(seed++);
      gpu::test::Device dev;
      cpu::ThreadPool pool(1);
      Config c = moe_config(ScoringFunc::SqrtSoftplus, hidden);
      c.n_routed_experts = uint32_t(n_experts);
      c.num_experts_per_tok = uint32_t(top_k);
      const MoeLayer layer(rng, dev, c, kind);
      const int64_t E = n_experts, k = top_k, D = hidden;
      const std::vector<float> x = rng.floats(size_t(D));
      std::vector<float> want_logits(static_cast<size_t>(E));
      cpu::matmul(pool, layer.gate.ref(), x.data(), D, want_logits.data(), E, 1);
      const int32_t token = rng.below(int32_t(c.vocab_size));
      float* logits = dev.zeros<float>(uint64_t(E));
      int32_t* idx = dev.zeros<int32_t>(uint64_t(k));
      float* w = dev.zeros<float>(uint64_t(k));
      uint32_t* ticket = dev.zeros<uint32_t>(1);
      const float* xd = dev.put(x);
      const int32_t* tokens = dev.put(std::vector<int32_t>{token});
      const std::string what = std::string("gate_and_route ") + (kind == MlpKind::HashMoe ? "hash" : "scored") + " E " +
                               std::to_string(E) + " k " + std::to_string(k) + " D " + std::to_string(D);
      INFO(what);
      for (int launch = 0; launch < 2; ++launch) {
        CAPTURE(launch);
        REQUIRE(gpu::gate_and_route(layer.dev, c, tokens, xd, logits, idx, w, ticket, dev.stream(), nullptr, 0, 0,
                                    nullptr, gpu::TokenRecord{}));
        const std::vector<float> got_logits = dev.get(logits, uint64_t(E));
        check_close(what + " logits", got_logits, want_logits, 1e-5);
        std::vector<int32_t> want_idx(static_cast<size_t>(k));
        std::vector<float> want_w(static_cast<size_t>(k)), scores(static_cast<size_t>(E)),
            biased(static_cast<size_t>(E));
        route_token(layer.cpu, c, token, got_logits.data(), scores.data(), biased.data(), want_idx.data(),
                    want_w.data());
        CHECK(dev.get(idx, uint64_t(k)) == want_idx);
        check_close(what + " weights", dev.get(w, uint64_t(k)), want_w, 1e-6);
        CHECK(dev.get(ticket, 1) == std::vector<uint32_t>{0});
      }
    }
}

namespace {

// One GPU moe() call against the CPU's, with experts in the given encodings, band width `band`
// (0: all experts in one acquire, from fixed slots), then the same call again. matrix: experts
// serving 16 tokens or more take the matrix cores (x in two bf16 parts: held to 1e-4), and where
// the device has them the result must differ from the CUDA-core run of the same layer; experts
// serving one token each take them only with `matrix` (the single-token products on the matrix
// cores), else the CUDA-core single-token kernels.
void check_moe(Dtype w13, Dtype w2, uint32_t layer_id, int64_t S, uint32_t band, uint64_t seed, int64_t hidden = 128,
               int64_t intermediate = 96, bool matrix = false, int gemv_stages = 0,
               ExpertPrecision precision = ExpertPrecision::SplitBf16) {
  Rng rng(seed);
  gpu::test::Device dev;
  cpu::ThreadPool pool(1);
  const Config c = moe_config(ScoringFunc::SqrtSoftplus, hidden, intermediate);
  const int64_t D = c.hidden_size, E = c.n_routed_experts;
  const MoeLayer layer(rng, dev, c, c.mlp_layer_types[layer_id]);
  gpu::GpuLayerParams params = layer.dev;
  // 0: the CUDA-core kernels under test; 16: the thresholds these matrix cases were sized for.
  params.gemm.matrix_min_tokens = params.gemm.expert_min_tokens = matrix ? 16 : 0;
  params.gemm.single_token = matrix;
  params.gemm.gemv_stages = gemv_stages;
  params.gemm.expert_precision = precision;
  const ExpertLayout layout = ExpertLayout::packed(c.hidden_size, c.moe_intermediate_size, w13, w2);
  ResidentExpertSource host_experts(layout, c.num_hidden_layers, c.n_routed_experts);
  fill_experts(rng, host_experts, c);

  std::vector<int32_t> tokens(static_cast<size_t>(S));
  for (auto& t : tokens) t = rng.below(int32_t(c.vocab_size));
  const std::vector<float> yn = rng.floats(size_t(S * D), -2.0f, 2.0f);

  Scratch sc;
  sc.allocate(c, S, 1, 1, 1);
  std::vector<float> want(size_t(S * D));
  MoeStats want_stats;
  BandedCpuSource cpu_source(host_experts, band ? band : uint32_t(E));
  moe(pool, layer.cpu, c, layer_id, tokens.data(), S, yn.data(), cpu_source, layout, sc, want.data(), want_stats);

  std::unique_ptr<gpu::GpuExpertSource> source;
  if (band) source = std::make_unique<FewDeviceSlots>(host_experts, dev, band);
  else source = std::make_unique<ResidentDeviceExperts>(host_experts, dev, c.num_hidden_layers, uint32_t(E));
  auto msc = gpu::allocate_moe_scratch(c, S, dev.arena(), dev.pinned());
  const int32_t* tokens_d = dev.put(tokens);
  const float* yn_d = dev.put(yn);
  float* out = dev.zeros<float>(want.size());
  MoeStats stats;
  gpu::moe(params, c, layer_id, tokens.data(), tokens_d, S, yn_d, *source, layout, *msc, out, stats, dev.stream());
  const std::vector<float> got = dev.get(out, want.size());

  const std::string what = "moe experts " + std::string(dtype_name(w13)) + "/" + std::string(dtype_name(w2)) +
                           (layer_id == 0 ? " hash" : " scored") + " S " + std::to_string(S) + " D " +
                           std::to_string(D) + " I " + std::to_string(intermediate) + " E 16 k 4" + " band " +
                           std::to_string(band) + " gemv stages " + std::to_string(gemv_stages) + " precision " +
                           std::string(expert_precision_name(precision));
  INFO(what);
  // The matrix cores' x: two bf16 parts (2^-17 relative) or one fp16 part (2^-12, FP4 experts).
  const bool fp16 = matrix && precision == ExpertPrecision::Fp16 && w13 == Dtype::I8 && w2 == Dtype::I8;
  check_close(what, got, want, fp16 ? 2e-3 : matrix ? 1e-4 : 5e-5);
  CHECK(stats.acquires == want_stats.acquires);
  CHECK(stats.routed_experts == want_stats.routed_experts);
  CHECK(stats.table_uploads >= 1);

  // The same call again: identical bits; with fixed slots, no table upload.
  const uint64_t uploads = stats.table_uploads;
  gpu::moe(params, c, layer_id, tokens.data(), tokens_d, S, yn_d, *source, layout, *msc, out, stats, dev.stream());
  const std::vector<float> again = dev.get(out, want.size());
  CHECK(std::memcmp(again.data(), got.data(), got.size() * sizeof(float)) == 0);
  CHECK(stats.acquires == 2 * want_stats.acquires);
  if (!band) CHECK(stats.table_uploads == uploads);

  // The streamed fp16 tiles and the register tiles: the same products in the same order.
  if (fp16 && gpu::matrix_cores_available()) {
    gpu::GpuLayerParams other = params;
    other.gemm.expert_stream = !params.gemm.expert_stream;
    gpu::moe(other, c, layer_id, tokens.data(), tokens_d, S, yn_d, *source, layout, *msc, out, stats, dev.stream());
    const std::vector<float> swapped = dev.get(out, want.size());
    CHECK(std::memcmp(swapped.data(), got.data(), got.size() * sizeof(float)) == 0);
  }

  if (matrix && gpu::matrix_cores_available()) {
    gpu::GpuLayerParams cuda_cores = params;
    cuda_cores.gemm.matrix_min_tokens = cuda_cores.gemm.expert_min_tokens = 0;
    cuda_cores.gemm.single_token = false;
    gpu::moe(cuda_cores, c, layer_id, tokens.data(), tokens_d, S, yn_d, *source, layout, *msc, out, stats,
             dev.stream());
    const std::vector<float> plain = dev.get(out, want.size());
    check_close(what + " (CUDA cores)", plain, want, 5e-5);
    // A hash row may name one expert twice: with one token, that expert then serves two pairs,
    // too few for the many-token matrix path and too many for the single-token one, so both runs
    // take the CUDA cores and agree bit for bit. Anywhere else the matrix cores must have run.
    const int32_t* row = layer.cpu.tid2eid.data() + size_t(tokens[0]) * size_t(c.num_experts_per_tok);
    const bool repeated = c.mlp_layer_types[layer_id] == MlpKind::HashMoe && S == 1 &&
                          std::set<int32_t>(row, row + c.num_experts_per_tok).size() < size_t(c.num_experts_per_tok);
    if (!repeated) CHECK(std::memcmp(plain.data(), got.data(), got.size() * sizeof(float)) != 0);
  }
}

// The e8m0 scale bytes an FP4 part's block scales are drawn from.
struct ScaleRange {
  uint8_t lo, hi;
};

// FP4 experts whose block scales are drawn from `up` (w1, w3) and `down` (w2), on the fp16 tiles
// (ExpertPrecision::Fp16), 200 tokens of a scored layer, x uniform in +-x_amplitude, the SwiGLU
// clamped at `limit`. The inputs keep w1 x and w3 x a few times the clamp at most: where they are
// far past it, any rounding of x moves the clamped values near zero by their whole range.
// poison >= 0: that expert's first w1 scale becomes 2^113 instead (kPoisonAll: every expert's).
// tokens: 200, or 1 for decode's single-token products (on the matrix cores). Returns the fault
// the call reported ("" when none), and where there was none, checks the result against the CPU's.
constexpr int kPoisonAll = 1 << 20;
std::string fp16_scales_run(ScaleRange up, ScaleRange down, float x_amplitude, double limit, int poison, uint64_t seed,
                            int64_t intermediate = 192, int64_t tokens = 200) {
  Rng rng(seed);
  gpu::test::Device dev;
  cpu::ThreadPool pool(1);
  Config c = moe_config(ScoringFunc::SqrtSoftplus, 256, intermediate);
  c.swiglu_limit = limit;
  const uint32_t layer_id = 1;
  const int64_t S = tokens, D = c.hidden_size, E = c.n_routed_experts;
  const MoeLayer layer(rng, dev, c, c.mlp_layer_types[layer_id]);
  gpu::GpuLayerParams params = layer.dev;
  params.gemm.matrix_min_tokens = params.gemm.expert_min_tokens = 16;
  params.gemm.single_token = true;
  params.gemm.expert_precision = ExpertPrecision::Fp16;
  const ExpertLayout layout = ExpertLayout::packed(c.hidden_size, c.moe_intermediate_size, Dtype::I8, Dtype::I8);
  ResidentExpertSource host_experts(layout, c.num_hidden_layers, c.n_routed_experts);
  fill_experts(rng, host_experts, c);
  const int64_t I = c.moe_intermediate_size;
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l)
    for (uint32_t e = 0; e < uint32_t(E); ++e)
      for (const auto& [part, rows, cols, range] :
           {std::tuple{layout.w1, I, D, up}, {layout.w3, I, D, up}, {layout.w2, D, I, down}}) {
        std::byte* sc = host_experts.slot(l, e) + part.scale_offset;
        const uint64_t n = ExpertLayout::scale_bytes(Dtype::I8, uint64_t(rows), uint64_t(cols));
        for (uint64_t i = 0; i < n; ++i)
          sc[i] = std::byte(uint8_t(range.lo + rng.below(int32_t(range.hi - range.lo) + 1)));
      }
  for (uint32_t e = 0; e < uint32_t(E); ++e)
    if (poison == kPoisonAll || int(e) == poison)
      host_experts.slot(layer_id, e)[layout.w1.scale_offset] = std::byte(240);

  std::vector<int32_t> ids(static_cast<size_t>(S));
  for (auto& t : ids) t = rng.below(int32_t(c.vocab_size));
  const std::vector<float> yn = rng.floats(size_t(S * D), -x_amplitude, x_amplitude);
  ResidentDeviceExperts source(host_experts, dev, c.num_hidden_layers, uint32_t(E));
  auto msc = gpu::allocate_moe_scratch(c, S, dev.arena(), dev.pinned());
  float* out = dev.zeros<float>(size_t(S * D));
  MoeStats stats;
  gpu::moe(params, c, layer_id, ids.data(), dev.put(ids), S, dev.put(yn), source, layout, *msc, out, stats,
           dev.stream());
  gpu::fetch_router_fault(*msc, dev.stream());
  const std::vector<float> got = dev.get(out, size_t(S * D));  // synchronizes
  try {
    gpu::throw_if_router_fault(*msc, dev.stream());
  } catch (const std::exception& e) {
    return e.what();
  }
  Scratch sc;
  sc.allocate(c, S, 1, 1, 1);
  std::vector<float> want(size_t(S * D));
  MoeStats want_stats;
  BandedCpuSource cpu_source(host_experts, uint32_t(E));
  moe(pool, layer.cpu, c, layer_id, ids.data(), S, yn.data(), cpu_source, layout, sc, want.data(), want_stats);
  check_close("fp16 expert tiles, scales " + std::to_string(up.lo) + ".." + std::to_string(up.hi) + " / " +
                  std::to_string(down.lo) + ".." + std::to_string(down.hi),
              got, want, 2e-3);
  return "";
}

}  // namespace

TEST_CASE("gpu moe matches forward/moe.cpp for every expert encoding, hash and scored layers") {
  const Dtype pairs[][2] = {{Dtype::F32, Dtype::F32},         {Dtype::BF16, Dtype::BF16}, {Dtype::F16, Dtype::F16},
                            {Dtype::F8_E4M3, Dtype::F8_E4M3}, {Dtype::I8, Dtype::I8},     {Dtype::I8, Dtype::BF16}};
  uint64_t seed = 200;
  for (const auto& p : pairs)
    for (uint32_t layer : {0u, 1u})
      for (int64_t S : {1, 6, 13}) check_moe(p[0], p[1], layer, S, 0, seed++);
}

TEST_CASE("gpu moe serves experts in bands through moving slots like the CPU") {
  uint64_t seed = 300;
  for (uint32_t layer : {0u, 1u})
    for (int64_t S : {6, 13}) {
      check_moe(Dtype::I8, Dtype::I8, layer, S, 4, seed++);
      check_moe(Dtype::BF16, Dtype::F8_E4M3, layer, S, 5, seed++);
    }
}

TEST_CASE("gpu moe's experts of many tokens on the matrix cores match forward/moe.cpp, in bands too") {
  // 16 experts, top-4: 100 tokens give each expert about 25 (32-token tiles, some experts two),
  // 200 about 50 (one partial 64-token tile), 500 about 125 (two tiles). Columns and rows are
  // multiples of 64, as the matrix path needs.
  const Dtype pairs[][2] = {{Dtype::I8, Dtype::I8}, {Dtype::F8_E4M3, Dtype::F8_E4M3}, {Dtype::BF16, Dtype::I8}};
  uint64_t seed = 600;
  for (const auto& p : pairs)
    for (uint32_t layer : {0u, 1u})
      for (int64_t S : {100, 200, 500}) check_moe(p[0], p[1], layer, S, 0, seed++, 256, 192, true);
  check_moe(Dtype::I8, Dtype::I8, 1, 200, 5, seed++, 256, 192, true);  // bands through moving slots
  // The default operands of FP4 experts: weights exact in fp16, x in one fp16 part.
  for (uint32_t layer : {0u, 1u})
    for (int64_t S : {100, 200, 500})
      check_moe(Dtype::I8, Dtype::I8, layer, S, 0, seed++, 256, 192, true, 0, ExpertPrecision::Fp16);
  check_moe(Dtype::I8, Dtype::I8, 1, 200, 5, seed++, 256, 192, true, 0, ExpertPrecision::Fp16);
}

TEST_CASE("gpu moe's streamed fp16 expert tiles match forward/moe.cpp and give the register tiles' bits") {
  // D 1024 / I 512: scale rows of 32 and 16 bytes (copied in 16-byte pieces); D 256 / I 128: 8
  // and 4 bytes (4-byte pieces). 100, 200 and 500 tokens over 16 experts top-4: 32-token tiles,
  // one partial 64-token tile, two tiles. check_moe runs the register tiles beside and compares.
  uint64_t seed = 900;
  for (const auto& [hidden, inter] : {std::pair<int64_t, int64_t>{1024, 512}, {256, 128}}) {
    const Config c = moe_config(ScoringFunc::SqrtSoftplus, hidden, inter);
    const ExpertLayout layout = ExpertLayout::packed(c.hidden_size, c.moe_intermediate_size, Dtype::I8, Dtype::I8);
    gpu::GpuLayerParams lp;
    lp.gemm.expert_min_tokens = 16;
    CHECK(gpu::moe_streams_experts(lp, layout, c, 25) == gpu::matrix_cores_available());
    lp.gemm.expert_stream = false;
    CHECK_FALSE(gpu::moe_streams_experts(lp, layout, c, 25));
    for (uint32_t layer : {0u, 1u})
      for (int64_t S : {100, 200, 500})
        check_moe(Dtype::I8, Dtype::I8, layer, S, 0, seed++, hidden, inter, true, 0, ExpertPrecision::Fp16);
    check_moe(Dtype::I8, Dtype::I8, 1, 200, 5, seed++, hidden, inter, true, 0, ExpertPrecision::Fp16);  // bands
  }
  // FP8 experts, and shapes the tile does not take (I 192: scale rows of 6 bytes), stay on the
  // register tiles.
  gpu::GpuLayerParams lp;
  const Config c = moe_config(ScoringFunc::SqrtSoftplus, 256, 192);
  CHECK_FALSE(gpu::moe_streams_experts(
      lp, ExpertLayout::packed(c.hidden_size, c.moe_intermediate_size, Dtype::I8, Dtype::I8), c, 25));
  const Config c2 = moe_config(ScoringFunc::SqrtSoftplus, 256, 128);
  CHECK_FALSE(gpu::moe_streams_experts(
      lp, ExpertLayout::packed(c2.hidden_size, c2.moe_intermediate_size, Dtype::F8_E4M3, Dtype::F8_E4M3), c2, 25));
}

TEST_CASE("gpu moe's single-token expert products (x in registers) match forward/moe.cpp for every encoding") {
  // Rows of 1024 columns are whole groups of 32 16-byte chunks in every encoding but F16, so a
  // token whose experts serve only it takes the single-token kernels; two tokens may share one.
  const Dtype pairs[][2] = {{Dtype::F32, Dtype::F32},
                            {Dtype::BF16, Dtype::BF16},
                            {Dtype::F8_E4M3, Dtype::F8_E4M3},
                            {Dtype::I8, Dtype::I8},
                            {Dtype::I8, Dtype::F8_E4M3}};
  uint64_t seed = 400;
  for (const auto& p : pairs)
    for (uint32_t layer : {0u, 1u}) {
      for (int64_t S : {1, 2}) check_moe(p[0], p[1], layer, S, 0, seed++, 1024, 1024);
      check_moe(p[0], p[1], layer, 1, 2, seed++, 1024, 1024);  // two bands of two experts
    }
}

TEST_CASE("gpu moe's single-token BF16 expert products with their loads in flight match forward/moe.cpp") {
  // The ring of gemv_stages steps (row_gemv_staged.hpp; BF16 weights) in the experts' w1/w3 and w2
  // kernels, and without it: D 4096 and I 2048 are decode's shape (eight slices for w1/w3, four for
  // w2 in BF16), 1024 one group per slice.
  uint64_t seed = 800;
  for (int stages : {0, 2, 3, 4}) {
    check_moe(Dtype::BF16, Dtype::BF16, 1, 1, 0, seed++, 4096, 2048, false, stages);
    check_moe(Dtype::BF16, Dtype::BF16, 0, 1, 2, seed++, 1024, 1024, false, stages);  // two bands of two experts
  }
}

TEST_CASE("gpu moe's single-token expert products on the matrix cores match forward/moe.cpp") {
  // Decode's shape: every expert serves one token (S 1). D 1024: two 64-column steps per warp; D 1088: 17 steps over 8
  // warps (uneven slices); D 8192 with FP4: 16 steps per warp, two rounds of loads. Rows are multiples of 64.
  const Dtype pairs[][2] = {{Dtype::I8, Dtype::I8},
                            {Dtype::F8_E4M3, Dtype::F8_E4M3},
                            {Dtype::BF16, Dtype::BF16},
                            {Dtype::I8, Dtype::F8_E4M3}};
  uint64_t seed = 700;
  for (const auto& p : pairs)
    for (uint32_t layer : {0u, 1u}) {
      check_moe(p[0], p[1], layer, 1, 0, seed++, 1024, 1024, true);
      check_moe(p[0], p[1], layer, 1, 0, seed++, 1088, 192, true);
      check_moe(p[0], p[1], layer, 1, 2, seed++, 1024, 1024, true);  // two bands of two experts
    }
  check_moe(Dtype::I8, Dtype::I8, 1, 1, 0, seed++, 8192, 256, true);
}

TEST_CASE("gpu moe's single-token FP4 expert products on fp16 operands match forward/moe.cpp") {
  // mma_gemv_fp4.hpp: a warp per 16 rows across all columns, chunks of two 128-column steps, three
  // chunks of registers in turn. D 4096 / I 2048 (decode's shape: 16 and 8 chunks, neither a
  // multiple of three), D 1152 / I 384 (9 and 3 steps: short last chunks), D 256 / I 128 (one chunk,
  // one of them short), D 1088 / I 192 (a last half step of 64 columns); rows 384, 192 and 128 leave
  // warps past the last row.
  uint64_t seed = 1000;
  for (uint32_t layer : {0u, 1u})
    for (const auto& [hidden, inter] :
         {std::pair<int64_t, int64_t>{4096, 2048}, {1152, 384}, {256, 128}, {1088, 192}}) {
      check_moe(Dtype::I8, Dtype::I8, layer, 1, 0, seed++, hidden, inter, true, 0, ExpertPrecision::Fp16);
      check_moe(Dtype::I8, Dtype::I8, layer, 1, 2, seed++, hidden, inter, true, 0, ExpertPrecision::Fp16);  // bands
    }
  auto takes = [](int64_t hidden, int64_t inter, Dtype w13, bool single_token) {
    const Config c = moe_config(ScoringFunc::SqrtSoftplus, hidden, inter);
    gpu::GpuLayerParams lp;
    lp.gemm.single_token = single_token;
    return gpu::moe_single_token_fp16(lp, ExpertLayout::packed(c.hidden_size, c.moe_intermediate_size, w13, Dtype::I8),
                                      c);
  };
  CHECK(takes(4096, 2048, Dtype::I8, true) == gpu::matrix_cores_available());
  CHECK_FALSE(takes(4096, 2048, Dtype::I8, false));
  CHECK(takes(1088, 192, Dtype::I8, true) == gpu::matrix_cores_available());
  CHECK_FALSE(takes(1056, 192, Dtype::I8, true));  // 1056 is not a whole number of 64-column halves
  CHECK_FALSE(takes(4096, 2048, Dtype::F8_E4M3, true));
}

TEST_CASE("gpu moe's fp16 expert tiles take FP4 scales up to 2^13 and report one past it") {
  if (!gpu::matrix_cores_available()) {  // the fp16 tiles are the matrix cores' (NVIDIA sm_80+)
    MESSAGE("no matrix cores on this device: the fp16 expert tiles are not built for it");
    return;
  }
  // Scales 2^-10 .. 2^1 take one multiply per weight, 2^2 .. 2^13 the two-multiply path; the
  // large ones in w2, then in w1 and w3 with x small enough to keep their sums near the clamp.
  // I 192 keeps the register tiles (scale rows of 6 bytes), I 128 the streamed ones.
  const ScaleRange one{117, 128}, two{129, 140};
  CHECK(fp16_scales_run(one, one, 2.0f, 10.0, -1, 700) == "");
  CHECK(fp16_scales_run(one, two, 2.0f, 10.0, -1, 701) == "");
  CHECK(fp16_scales_run(two, one, 1.0f / 2048, 200.0, -1, 703) == "");
  const std::string fault = fp16_scales_run(one, one, 2.0f, 10.0, 5, 702);
  CHECK(fault.find("routed experts of layer 1: expert 5 has an FP4 block scale 2^113") != std::string::npos);
  CHECK(fault.find("matrix_expert_precision") != std::string::npos);
  // I 128: the streamed tiles (the register tiles above), the same scales and the same report.
  CHECK(fp16_scales_run(one, two, 2.0f, 10.0, -1, 704, 128) == "");
  CHECK(fp16_scales_run(two, one, 1.0f / 2048, 200.0, -1, 705, 128) == "");
  const std::string streamed = fp16_scales_run(one, one, 2.0f, 10.0, 5, 706, 128);
  CHECK(streamed.find("routed experts of layer 1: expert 5 has an FP4 block scale 2^113") != std::string::npos);
  // One token (decode's fp16 products, mma_gemv_fp4.hpp), the same scales; every expert poisoned,
  // so whichever the token routes to reports.
  CHECK(fp16_scales_run(one, two, 2.0f, 10.0, -1, 707, 128, 1) == "");
  CHECK(fp16_scales_run(two, one, 1.0f / 2048, 200.0, -1, 708, 128, 1) == "");
  const std::string single = fp16_scales_run(one, one, 2.0f, 10.0, kPoisonAll, 709, 128, 1);
  CHECK(single.find("routed experts of layer 1: expert ") != std::string::npos);
  CHECK(single.find("has an FP4 block scale 2^113") != std::string::npos);
}
