#include "tiny_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace moepage::ds4::test {

Config tiny_config() {
  Config c;
  c.vocab_size = 96;
  c.hidden_size = 64;
  c.moe_intermediate_size = 32;
  c.num_hidden_layers = 6;
  c.num_attention_heads = 4;
  c.head_dim = 32;
  c.qk_rope_head_dim = 8;
  c.q_lora_rank = 32;
  c.o_groups = 2;
  c.o_lora_rank = 16;
  c.n_routed_experts = 16;
  c.num_experts_per_tok = 4;
  c.routed_scaling_factor = 1.5;
  c.swiglu_limit = 10.0;
  c.sliding_window = 8;
  c.compress_rate_csa = 4;
  c.compress_rate_hca = 8;
  c.hc_mult = 4;
  c.hc_sinkhorn_iters = 20;
  c.index_n_heads = 4;
  c.index_head_dim = 16;
  c.index_topk = 2;
  c.rope_main = RopeParams{10000.0, false, 1.0, 0.0, 32.0, 1.0};
  c.rope_compress = RopeParams{160000.0, true, 16.0, 64.0, 32.0, 1.0};
  c.layer_types = {AttnKind::Sliding, AttnKind::Sliding, AttnKind::CSA, AttnKind::HCA, AttnKind::CSA, AttnKind::HCA};
  c.mlp_layer_types = {MlpKind::HashMoe, MlpKind::HashMoe, MlpKind::HashMoe, MlpKind::Moe, MlpKind::Moe, MlpKind::Moe};
  return c;
}

void encode_matrix(const float* v, int64_t rows, int64_t cols, Dtype dtype, std::vector<std::byte>& data,
                   std::vector<std::byte>& scale) {
  scale.clear();
  const size_t n = size_t(rows * cols);
  switch (dtype) {
    case Dtype::F32:
      data.resize(n * 4);
      std::memcpy(data.data(), v, n * 4);
      return;
    case Dtype::BF16:
    case Dtype::F16:
      data.resize(n * 2);
      for (size_t i = 0; i < n; ++i) {
        const uint16_t b = dtype == Dtype::BF16 ? float_to_bf16(v[i]) : float_to_f16(v[i]);
        std::memcpy(data.data() + 2 * i, &b, 2);
      }
      return;
    case Dtype::F8_E4M3: {
      const int64_t br = (rows + 127) / 128, bc = (cols + 127) / 128;
      data.resize(n);
      scale.resize(size_t(br * bc));
      for (int64_t bi = 0; bi < br; ++bi)
        for (int64_t bj = 0; bj < bc; ++bj) {
          float amax = 0;
          for (int64_t r = bi * 128; r < std::min(rows, bi * 128 + 128); ++r)
            for (int64_t c = bj * 128; c < std::min(cols, bj * 128 + 128); ++c)
              amax = std::max(amax, std::fabs(v[r * cols + c]));
          const uint8_t s = float_to_e8m0_ceil(std::max(amax, 1e-30f) / 448.0f);
          scale[size_t(bi * bc + bj)] = std::byte(s);
          const float sf = e8m0_to_float(s);
          for (int64_t r = bi * 128; r < std::min(rows, bi * 128 + 128); ++r)
            for (int64_t c = bj * 128; c < std::min(cols, bj * 128 + 128); ++c)
              data[size_t(r * cols + c)] = std::byte(float_to_e4m3(v[r * cols + c] / sf));
        }
      return;
    }
    case Dtype::I8: {
      data.assign(n / 2, std::byte(0));
      scale.resize(size_t(rows * (cols / 32)));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < cols / 32; ++g) {
          float amax = 0;
          for (int64_t c = g * 32; c < g * 32 + 32; ++c) amax = std::max(amax, std::fabs(v[r * cols + c]));
          const uint8_t s = float_to_e8m0_ceil(std::max(amax, 1e-30f) / 6.0f);
          scale[size_t(r * (cols / 32) + g)] = std::byte(s);
          const float sf = e8m0_to_float(s);
          for (int64_t c = g * 32; c < g * 32 + 32; ++c) {
            const uint8_t code = float_to_e2m1(v[r * cols + c] / sf);
            auto& byte = data[size_t((r * cols + c) / 2)];
            byte |= std::byte(c % 2 == 0 ? code : uint8_t(code << 4));
          }
        }
      return;
    }
    default: throw std::invalid_argument("encode_matrix: unsupported dtype");
  }
}

float TinyModel::uniform() {  // xorshift64*: portable and reproducible across standard libraries
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  const uint64_t r = rng_ * 2685821657736338717ull;
  return float(double(r >> 11) / double(1ull << 53)) * 2.0f - 1.0f;
}

WeightRef TinyModel::matrix(int64_t rows, int64_t cols, Dtype dtype, float amplitude) {
  std::vector<float> v(size_t(rows * cols));
  const float a = amplitude / std::sqrt(float(cols));
  for (float& x : v) x = a * uniform();
  auto data = std::make_unique<std::vector<std::byte>>();
  auto scale = std::make_unique<std::vector<std::byte>>();
  encode_matrix(v.data(), rows, cols, dtype, *data, *scale);
  WeightRef w;
  w.dtype = dtype;
  w.shape = {rows, dtype == Dtype::I8 ? cols / 2 : cols};
  w.data = data->data();
  w.scale = scale->empty() ? nullptr : scale->data();
  blobs_.push_back(std::move(data));
  blobs_.push_back(std::move(scale));
  return w;
}

WeightRef TinyModel::vector(std::vector<int64_t> shape, float center, float amplitude) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  auto data = std::make_unique<std::vector<std::byte>>(size_t(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    const float x = center + amplitude * uniform();
    std::memcpy(data->data() + 4 * i, &x, 4);
  }
  WeightRef w{Dtype::F32, std::move(shape), data->data(), nullptr, {}};
  blobs_.push_back(std::move(data));
  return w;
}

WeightRef TinyModel::ids(const std::vector<int64_t>& values, std::vector<int64_t> shape) {
  auto data = std::make_unique<std::vector<std::byte>>(values.size() * 8);
  std::memcpy(data->data(), values.data(), values.size() * 8);
  WeightRef w{Dtype::I64, std::move(shape), data->data(), nullptr, {}};
  blobs_.push_back(std::move(data));
  return w;
}

TinyModel::TinyModel(const Config& c, Encoding enc, uint32_t seed) : rng_(0x9E3779B97F4A7C15ull ^ seed) {
  const int64_t D = c.hidden_size, N = c.hc_mult, H = c.num_attention_heads, hd = c.head_dim;
  const int64_t E = c.n_routed_experts, I = c.moe_intermediate_size, k = c.num_experts_per_tok;
  const int64_t n_mix = (2 + N) * N;
  const Dtype dense = enc.dense;
  // Small matrices the released checkpoint keeps in BF16/F32 use plain float here.
  const Dtype plain = dense == Dtype::F8_E4M3 ? Dtype::BF16 : dense;
  weights_.embed = matrix(c.vocab_size, D, plain, 8.0f);
  weights_.head = matrix(c.vocab_size, D, plain, 1.0f);
  weights_.norm = vector({D}, 1.0f, 0.2f);
  weights_.hc_head_fn = matrix(N, N * D, Dtype::F32, 1.0f);
  weights_.hc_head_base = vector({N}, 0.0f, 0.5f);
  weights_.hc_head_scale = vector({1}, 1.0f, 0.2f);
  auto compressor = [&](int64_t width, int64_t dim, uint32_t ratio) {
    CompressorWeights cw;
    cw.wkv = matrix(width, D, plain, 1.0f);
    cw.wgate = matrix(width, D, plain, 2.0f);
    cw.ape = vector({ratio, width}, 0.0f, 0.5f);
    cw.norm = vector({dim}, 1.0f, 0.2f);
    return cw;
  };
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights lw;
    lw.hc_attn_fn = matrix(n_mix, N * D, Dtype::F32, 1.0f);
    lw.hc_attn_base = vector({n_mix}, 0.0f, 0.5f);
    lw.hc_attn_scale = vector({3}, 1.0f, 0.2f);
    lw.hc_ffn_fn = matrix(n_mix, N * D, Dtype::F32, 1.0f);
    lw.hc_ffn_base = vector({n_mix}, 0.0f, 0.5f);
    lw.hc_ffn_scale = vector({3}, 1.0f, 0.2f);
    lw.attn_norm = vector({D}, 1.0f, 0.2f);
    lw.ffn_norm = vector({D}, 1.0f, 0.2f);
    lw.wq_a = matrix(c.q_lora_rank, D, dense, 1.0f);
    lw.q_norm = vector({c.q_lora_rank}, 1.0f, 0.2f);
    lw.wq_b = matrix(H * hd, c.q_lora_rank, dense, 1.0f);
    lw.wkv = matrix(hd, D, dense, 1.0f);
    lw.kv_norm = vector({hd}, 1.0f, 0.2f);
    lw.wo_a = matrix(int64_t(c.o_groups) * c.o_lora_rank, H * hd / c.o_groups, dense, 1.0f);
    lw.wo_b = matrix(D, int64_t(c.o_groups) * c.o_lora_rank, dense, 1.0f);
    lw.attn_sink = vector({H}, 0.0f, 1.0f);
    const AttnKind kind = c.layer_types[l];
    if (kind != AttnKind::Sliding) {
      const bool csa = kind == AttnKind::CSA;
      lw.compressor = compressor(csa ? 2 * hd : hd, hd, c.compress_rate(l));
      if (csa) {
        lw.indexer_compressor = compressor(2 * int64_t(c.index_head_dim), c.index_head_dim, c.compress_rate(l));
        lw.indexer_wq_b = matrix(int64_t(c.index_n_heads) * c.index_head_dim, c.q_lora_rank, dense, 1.0f);
        lw.indexer_weights_proj = matrix(c.index_n_heads, D, plain, 1.0f);
      }
    }
    lw.gate = matrix(E, D, plain, 1.0f);
    if (c.mlp_layer_types[l] == MlpKind::HashMoe) {
      std::vector<int64_t> table(size_t(c.vocab_size * k));
      for (int64_t t = 0; t < c.vocab_size; ++t)
        for (int64_t j = 0; j < k; ++j) table[size_t(t * k + j)] = (t * k + j) % E;
      lw.tid2eid = ids(table, {c.vocab_size, k});
    } else {
      lw.gate_bias = vector({E}, 0.0f, 0.3f);
    }
    lw.shared_w1 = matrix(I, D, dense, 1.0f);
    lw.shared_w3 = matrix(I, D, dense, 1.0f);
    lw.shared_w2 = matrix(D, I, dense, 1.0f);
    weights_.layers.push_back(std::move(lw));
  }
  const Dtype w2 = enc.experts;
  layout_ = ExpertLayout::packed(uint32_t(D), uint32_t(I), enc.experts, w2);
  experts_ = std::make_unique<ResidentExpertSource>(layout_, c.num_hidden_layers, uint32_t(E));
  std::vector<std::byte> data, scale;
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l)
    for (uint32_t e = 0; e < E; ++e) {
      std::byte* slot = experts_->slot(l, e);
      auto put = [&](const ExpertPart& part, int64_t rows, int64_t cols) {
        std::vector<float> v(size_t(rows * cols));
        const float a = 1.0f / std::sqrt(float(cols));
        for (float& x : v) x = a * uniform();
        encode_matrix(v.data(), rows, cols, part.dtype, data, scale);
        std::memcpy(slot + part.offset, data.data(), data.size());
        if (part.has_scale) std::memcpy(slot + part.scale_offset, scale.data(), scale.size());
      };
      put(layout_.w1, I, D);
      put(layout_.w3, I, D);
      put(layout_.w2, D, I);
    }
}

}  // namespace moepage::ds4::test
