#include "loaded_checkpoint.hpp"

#include <algorithm>
#include <cstring>
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
    for (const WeightRef* r : {&l.hc_attn_fn, &l.hc_attn_base, &l.hc_attn_scale, &l.hc_ffn_fn, &l.hc_ffn_base,
                               &l.hc_ffn_scale, &l.attn_norm, &l.ffn_norm, &l.wq_a, &l.q_norm, &l.wq_b, &l.wkv,
                               &l.kv_norm, &l.wo_a, &l.wo_b, &l.attn_sink, &l.indexer_wq_b, &l.indexer_weights_proj,
                               &l.gate, &l.gate_bias, &l.tid2eid, &l.shared_w1, &l.shared_w2, &l.shared_w3})
      f(*r);
    compressor(l.compressor);
    compressor(l.indexer_compressor);
  }
}

// Sums the stored bytes of the tensors whose mapping the weights point at (a tied head shares the
// embedding's bytes and is counted once).
uint64_t mapped_bytes(const ckpt::Checkpoint& ck, const Weights& w) {
  std::unordered_set<const void*> used;
  for_each_ref(w, [&](const WeightRef& r) {
    if (r.data) used.insert(r.data);
    if (r.scale) used.insert(r.scale);
  });
  uint64_t total = 0;
  for (const ckpt::TensorInfo& t : ck.tensors())
    if (used.count(ck.view(t).data())) total += t.nbytes;
  return total;
}

}  // namespace

LoadedCheckpoint LoadedCheckpoint::load(const std::filesystem::path& dir) {
  LoadedCheckpoint m;
  m.dir = dir;
  m.config = load_config_json(dir).config;
  m.checkpoint = std::make_unique<ckpt::Checkpoint>(ckpt::Checkpoint::open(dir));
  m.resolver = std::make_unique<TensorResolver>(*m.checkpoint);
  m.resolver->check_required(m.config);
  m.weights = bind_weights(*m.resolver, m.config);
  m.catalog = ExpertCatalog::build(*m.resolver, m.config);
  // Fails early (naming the part) on an expert dtype or scale the CPU kernels cannot read.
  (void)expert_layout(*m.catalog, m.config);
  m.dense_bytes = mapped_bytes(*m.checkpoint, m.weights);
  m.expert_bytes = m.catalog->expert_file_bytes() * m.catalog->layers_with_experts() * m.catalog->n_experts();
  return m;
}

void hash_routed_experts(const LoadedCheckpoint& model, uint32_t layer, const int32_t* tokens, uint32_t n,
                         std::vector<int32_t>& out) {
  out.clear();
  const Config& c = model.config;
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
      if (e < 0 || e >= int64_t(c.n_routed_experts)) continue;  // the forward's checks name it
      if (std::find(out.begin(), out.end(), int32_t(e)) == out.end()) out.push_back(int32_t(e));
    }
  }
}

}  // namespace moepage::ds4
