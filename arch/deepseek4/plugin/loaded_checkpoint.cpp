#include "loaded_checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_set>

#include "deepseek4/forward/bind_weights.hpp"
#include "deepseek4/model/config_json.hpp"

namespace moepage::ds4 {
namespace {

// Every weight view of `w`, so dense_bytes counts exactly what the forward pass reads.
template <class F>
void for_each_ref(const Weights& w, F&& f) {
  for (const WeightRef* r : {&w.embed, &w.head, &w.norm, &w.hc_head_fn, &w.hc_head_base, &w.hc_head_scale}) f(*r);
  auto compressor = [&](const CompressorWeights& c) {
    for (const WeightRef* r : {&c.wkv, &c.wgate, &c.ape, &c.norm}) f(*r);
  };
  for (const LayerWeights& l : w.layers) {
    for (const WeightRef* r :
         {&l.hc_attn_fn, &l.hc_attn_base, &l.hc_attn_scale, &l.hc_ffn_fn, &l.hc_ffn_base,  &l.hc_ffn_scale,
          &l.attn_norm,  &l.ffn_norm,     &l.wq_a,          &l.q_norm,    &l.wq_b,         &l.wkv,
          &l.kv_norm,    &l.wo_a,         &l.wo_b,          &l.attn_sink, &l.indexer_wq_b, &l.indexer_weights_proj,
          &l.gate,       &l.gate_bias,    &l.tid2eid,       &l.shared_w1, &l.shared_w2,    &l.shared_w3})
      f(*r);
    compressor(l.compressor);
    compressor(l.indexer_compressor);
  }
}

// Sums the stored bytes of the tensors whose in-memory copy the weights point at (a tied head
// shares the embedding's bytes and is counted once).
uint64_t dense_bytes_read(const ckpt::Checkpoint& ck, const Weights& w) {
  std::unordered_set<const void*> used;
  for_each_ref(w, [&](const WeightRef& r) {
    if (r.data) used.insert(r.data);
    if (r.scale) used.insert(r.scale);
  });
  uint64_t total = 0;
  for (const ckpt::TensorInfo& t : ck.tensors())
    if (const uint8_t* bytes = ck.viewed_data(t); bytes && used.count(bytes)) total += t.nbytes;
  return total;
}

// A num_hidden_layers below the layers the checkpoint holds would run part of the model without
// a word: the layer tensors past it (other than multi-token-prediction layers, which carry
// eh_proj/enorm) are an error naming config.json and the key.
void check_layer_count(const ckpt::Checkpoint& ck, const Config& c, const std::filesystem::path& dir) {
  std::map<uint64_t, std::string> extra;  // layer -> one of its tensors
  std::set<uint64_t> prediction_layers;
  for (const ckpt::TensorInfo& t : ck.tensors()) {
    std::string_view name = t.name;
    if (name.starts_with("model.")) name.remove_prefix(6);
    if (!name.starts_with("layers.")) continue;
    name.remove_prefix(7);
    uint64_t layer = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), layer);
    if (ec != std::errc() || layer < c.num_hidden_layers) continue;
    extra.emplace(layer, t.name);
    const std::string_view rest(end, size_t(name.data() + name.size() - end));
    if (rest.find(".eh_proj") != std::string_view::npos || rest.find(".enorm") != std::string_view::npos)
      prediction_layers.insert(layer);
  }
  for (const auto& [layer, tensor] : extra) {
    if (prediction_layers.count(layer)) continue;
    throw ckpt::CheckpointError((dir / "config.json").string() +
                                ": key 'num_hidden_layers': " + std::to_string(c.num_hidden_layers) +
                                ", but the checkpoint holds layer " + std::to_string(layer) + " (tensor '" + tensor +
                                "'); it would run only part of the model");
  }
}

// The index of the first NaN or Inf among the n values of `w` (F32, BF16 or F16), or -1.
int64_t first_non_finite(const WeightRef& w, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    float v = 0;
    if (w.dtype == Dtype::F32) std::memcpy(&v, w.data + 4 * i, 4);
    else {
      uint16_t h = 0;
      std::memcpy(&h, w.data + 2 * i, 2);
      v = w.dtype == Dtype::BF16 ? bf16_to_float(h) : f16_to_float(h);
    }
    if (!std::isfinite(v)) return int64_t(i);
  }
  return -1;
}

// Norms, router weights and biases and the mixing parameters are small and steer every token: a
// NaN in a router bias changes the experts chosen for every token without an error. They, and
// every E8M0 scale read (0xFF is NaN), are checked once at load; the large projections are not
// (reading them all again would double the load time).
void check_finite_weights(const ckpt::Checkpoint& ck, const Weights& w) {
  auto check = [&](const WeightRef& r) {
    if (!r.present() || (r.dtype != Dtype::F32 && r.dtype != Dtype::BF16 && r.dtype != Dtype::F16)) return;
    uint64_t n = 1;
    for (int64_t d : r.shape) n *= uint64_t(d);
    if (const int64_t at = first_non_finite(r, n); at >= 0) {
      const ckpt::TensorInfo* t = ck.find(r.name);
      throw ckpt::CheckpointError((t ? t->file_path.string() : ck.dir().string()) + ": tensor '" + r.name +
                                  "': element " + std::to_string(at) + " is NaN or infinite");
    }
  };
  for (const WeightRef* r : {&w.norm, &w.hc_head_fn, &w.hc_head_base, &w.hc_head_scale}) check(*r);
  for (const LayerWeights& l : w.layers) {
    for (const WeightRef* r : {&l.attn_norm, &l.ffn_norm, &l.q_norm, &l.kv_norm, &l.gate, &l.gate_bias, &l.hc_attn_fn,
                               &l.hc_attn_base, &l.hc_attn_scale, &l.hc_ffn_fn, &l.hc_ffn_base, &l.hc_ffn_scale,
                               &l.attn_sink, &l.compressor.norm, &l.indexer_compressor.norm})
      check(*r);
  }
  for (const ckpt::TensorInfo& t : ck.tensors()) {
    if (t.dtype != Dtype::F8_E8M0) continue;
    const uint8_t* bytes = ck.viewed_data(t);
    if (!bytes) continue;  // an expert's scale: read into a slot, checked by nobody here
    for (uint64_t i = 0; i < t.nbytes; ++i) {
      if (e8m0_is_nan(bytes[i]))
        throw ckpt::CheckpointError(t.file_path.string() + ": tensor '" + t.name + "': scale " + std::to_string(i) +
                                    " is NaN (0xFF)");
    }
  }
}

}  // namespace

LoadedCheckpoint LoadedCheckpoint::load(const std::filesystem::path& dir) {
  LoadedCheckpoint m;
  m.dir = dir;
  ParsedConfig parsed = load_config_json(dir);
  m.config = parsed.config;
  m.ignored_config_keys = std::move(parsed.ignored_keys);
  m.checkpoint = std::make_unique<ckpt::Checkpoint>(ckpt::Checkpoint::open(dir));
  m.resolver = std::make_unique<TensorResolver>(*m.checkpoint);
  m.resolver->check_required(m.config);
  check_layer_count(*m.checkpoint, m.config, dir);
  m.weights = bind_weights(*m.resolver, m.config);
  check_finite_weights(*m.checkpoint, m.weights);
  m.catalog = ExpertCatalog::build(*m.resolver, m.config);
  // Fails early (naming the part) on an expert dtype or scale the CPU kernels cannot read.
  (void)expert_layout(*m.catalog, m.config);
  m.dense_bytes = dense_bytes_read(*m.checkpoint, m.weights);
  // The dense bytes are in memory now; a file rewritten while they were read is an error here
  // rather than a model of mixed versions.
  m.checkpoint->check_unchanged();
  m.expert_bytes = m.catalog->expert_file_bytes() * m.catalog->layers_with_experts() * m.catalog->n_experts();
  return m;
}

void hash_routed_experts(const LoadedCheckpoint& model, uint32_t layer, const int32_t* tokens, uint32_t n,
                         std::vector<int32_t>& out, std::vector<uint8_t>& seen) {
  const Config& c = model.config;
  DistinctExperts distinct(out, seen, c.n_routed_experts);
  if (layer >= c.num_hidden_layers || c.mlp_layer_types[layer] != MlpKind::HashMoe) return;
  const WeightRef& table = model.weights.layers[layer].tid2eid;
  const uint32_t k = c.num_experts_per_tok;
  for (uint32_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || uint32_t(tokens[i]) >= c.vocab_size) continue;  // forward() reports it
    for (uint32_t j = 0; j < k; ++j) {
      const size_t at = size_t(tokens[i]) * k + j;
      int64_t e = 0;
      if (table.dtype == Dtype::I64) std::memcpy(&e, table.data + at * 8, 8);
      else {
        int32_t v = 0;
        std::memcpy(&v, table.data + at * 4, 4);
        e = v;
      }
      distinct.add(e);
    }
  }
}

}  // namespace moepage::ds4
