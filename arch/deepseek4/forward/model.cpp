#include "deepseek4/forward/model.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "deepseek4/cpu/ops.hpp"
#include "deepseek4/forward/attention.hpp"
#include "deepseek4/forward/compressor.hpp"
#include "deepseek4/forward/hc.hpp"
#include "deepseek4/forward/head.hpp"

namespace moepage::ds4 {
cpu::RopeSpec rope_spec(const RopeParams& r) {
  return cpu::RopeSpec{r.theta, r.yarn, r.factor, r.original_max_position, r.beta_fast, r.beta_slow};
}

std::unique_ptr<cpu::Rope> make_rope(const RopeParams& r, const Config& config) {
  return std::make_unique<cpu::Rope>(rope_spec(r), int(config.qk_rope_head_dim));
}

void check_model_inputs(const Config& config, const ExpertLayout& layout, bool has_expert_source,
                        const ModelOptions& options, const char* who) {
  validate_config(config);
  if (!has_expert_source) throw std::invalid_argument(std::string(who) + ": no expert source");
  if (options.max_batch == 0 || options.max_context == 0)
    throw std::invalid_argument(std::string(who) + ": max_batch and max_context must be positive");
  check_expert_layout(layout, config);
  const ExpertParallel& ep = options.expert_parallel;
  if (!ep.collective) return;
  if (!ep.ownership) throw std::invalid_argument(std::string(who) + ": an expert-parallel rank needs an ownership");
  if (ep.ownership->n_layers() != config.num_hidden_layers || ep.ownership->n_experts() != config.n_routed_experts)
    throw std::invalid_argument(
        std::string(who) + ": the expert ownership covers " + std::to_string(ep.ownership->n_layers()) + " layers of " +
        std::to_string(ep.ownership->n_experts()) + " experts, the model has " +
        std::to_string(config.num_hidden_layers) + " of " + std::to_string(config.n_routed_experts));
  if (ep.collective->size() != ep.ownership->ranks() || ep.rank != ep.collective->rank())
    throw std::invalid_argument(std::string(who) + ": rank " + std::to_string(ep.rank) + " of an ownership over " +
                                std::to_string(ep.ownership->ranks()) + " ranks, but the collective is rank " +
                                std::to_string(ep.collective->rank()) + " of " + std::to_string(ep.collective->size()));
}

void check_expert_layout(const ExpertLayout& l, const Config& c) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("ds4 expert layout: " + what); };
  if (l.hidden != c.hidden_size || l.intermediate != c.moe_intermediate_size)
    bad("experts are [" + std::to_string(l.intermediate) + " x " + std::to_string(l.hidden) + "], the config needs [" +
        std::to_string(c.moe_intermediate_size) + " x " + std::to_string(c.hidden_size) + "]");
  const struct {
    const ExpertPart& p;
    const char* name;
    int64_t rows, cols;
  } parts[] = {{l.w1, "w1", l.intermediate, l.hidden},
               {l.w3, "w3", l.intermediate, l.hidden},
               {l.w2, "w2", l.hidden, l.intermediate}};
  for (const auto& part : parts) {
    const cpu::MatRef m{part.p.dtype, part.rows, part.cols, reinterpret_cast<const std::byte*>(1),
                        part.p.has_scale ? reinterpret_cast<const std::byte*>(1) : nullptr};
    if (std::string err = cpu::check_matref(m); !err.empty()) bad(std::string(part.name) + ": " + err);
    const uint64_t end = std::max(
        part.p.offset + ExpertLayout::weight_bytes(part.p.dtype, part.rows, part.cols),
        part.p.has_scale ? part.p.scale_offset + ExpertLayout::scale_bytes(part.p.dtype, part.rows, part.cols) : 0);
    if (end > l.slot_bytes)
      bad(std::string(part.name) + " ends past the slot (" + std::to_string(l.slot_bytes) + " bytes)");
  }
}

Model::Model(const Config& config, Weights weights, ExpertLayout layout, ExpertSource* experts, cpu::ThreadPool& pool,
             ModelOptions options)
    : config_(config),
      weights_(std::move(weights)),
      layout_(layout),
      experts_(experts),
      pool_(pool),
      options_(options),
      prompt_band_(config.n_routed_experts, config.num_experts_per_tok) {
  check_model_inputs(config_, layout_, experts_ != nullptr, options_, "ds4 model");
  rope_main_ = make_rope(config_.rope_main, config_);
  rope_compress_ = make_rope(config_.rope_compress, config_);
  params_ = prepare_params(config_, weights_, *rope_main_, *rope_compress_);
  if (options_.timeline) marks_.reserve(2 + 4 * size_t(config_.num_hidden_layers));  // start, 4 a layer, end

  const Config& c = config_;
  const int64_t ctx = options_.max_context, S = std::min<int64_t>(options_.max_batch, ctx);
  ring_size_ = std::min<int64_t>(ctx, c.sliding_window + S - 1);
  int64_t most_keys = 0, most_index_entries = 0;
  states_.resize(c.num_hidden_layers);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerParams& lp = params_.layers[l];
    LayerState& st = states_[l];
    st.ring.assign(size_t(ring_size_) * c.head_dim, 0.0f);
    int64_t comp_keys = 0;
    if (lp.kind != AttnKind::Sliding) {
      const int64_t entries = ctx / lp.comp.ratio;
      init_compressor_state(lp.comp, entries, st.comp);
      comp_keys = entries;
      if (lp.kind == AttnKind::CSA) {
        init_compressor_state(lp.index_comp, entries, st.index_comp);
        comp_keys = std::min<int64_t>(entries, c.index_topk);
        most_index_entries = std::max(most_index_entries, entries);
      }
    }
    most_keys = std::max(most_keys, std::min<int64_t>(c.sliding_window, ctx) + comp_keys);
  }
  scratch_.allocate(c, S, pool_.size(), most_keys, most_index_entries);
}

void Model::reset() {
  for (auto& st : states_) st.reset();
  position_ = 0;
}

void check_forward_input(const Config& config, const ModelOptions& options, uint64_t position, const int32_t* tokens,
                         uint32_t n, const char* who) {
  if (position + n > options.max_context)
    throw std::length_error(std::string(who) + ": " + std::to_string(position + n) + " positions exceed max_context " +
                            std::to_string(options.max_context));
  for (uint32_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || uint32_t(tokens[i]) >= config.vocab_size)
      throw std::out_of_range(std::string(who) + ": token id " + std::to_string(tokens[i]) +
                              " outside the vocabulary of " + std::to_string(config.vocab_size));
}

void Model::forward(const int32_t* tokens, uint32_t n, float* logits_out, bool all_logits) {
  if (n == 0) return;
  check_forward_input(config_, options_, position_, tokens, n, "ds4 model");
  const int64_t V = config_.vocab_size;
  for (uint32_t at = 0; at < n;) {
    const int64_t S = std::min<int64_t>(scratch_.max_batch, n - at);
    const bool last = at + S == n;
    if (all_logits) run_batch(tokens + at, S, logits_out + int64_t(at) * V, true);
    else run_batch(tokens + at, S, last ? logits_out : nullptr, false);
    at += uint32_t(S);
  }
}

// Hands the finished layer's state to the expert source (predictors stage the next layer from it).
// sc.u is free between layers, so the mean of the streams needs no extra memory.
void Model::observe_layer(uint32_t layer, const float* streams) {
  const int64_t N = config_.hc_mult, D = config_.hidden_size;
  float* mean = scratch_.u.data();
  for (int64_t d = 0; d < D; ++d) {
    float sum = 0.0f;
    for (int64_t i = 0; i < N; ++i) sum += streams[i * D + d];
    mean[d] = sum / float(N);
  }
  experts_->observe(layer, mean, uint32_t(D));
}

const int32_t* Model::forced_experts(uint32_t layer, int64_t p0, int64_t S) {
  if (!options_.forced_routing) return nullptr;
  const int64_t k = config_.num_experts_per_tok;
  int32_t* out = scratch_.forced_idx.data();
  for (int64_t s = 0; s < S; ++s)
    copy_forced_experts(*options_.forced_routing, config_, layer, uint64_t(p0 + s), out + s * k);
  return out;
}

void Model::stage_first_band(uint32_t layer, const int32_t* tokens, int64_t p0, int64_t S) {
  const Config& c = config_;
  const LayerParams& lp = params_.layers[layer];
  const uint32_t band = experts_->max_batch();
  std::span<const int32_t> first;
  if (const int32_t* forced = forced_experts(layer, p0, S)) first = prompt_band_.first_band(forced, S, band);
  else if (lp.mlp == MlpKind::HashMoe)
    first = prompt_band_.first_band_hashed(lp.tid2eid.data(), c.vocab_size, tokens, S, band);
  else first = prompt_band_.first_band(nullptr, S, band);
  if (!first.empty()) experts_->stage(layer, first);
}

void Model::run_batch(const int32_t* tokens, int64_t S, float* logits, bool all_logits) {
  const Config& c = config_;
  const int64_t N = c.hc_mult, D = c.hidden_size;
  Scratch& sc = scratch_;
  const int64_t p0 = int64_t(position_);
  // The CPU runs each block as it is issued: the host's clock is the device's.
  const bool timed = options_.timeline && S > 1;
  auto mark = [&] {
    if (timed) marks_.mark();
  };
  if (timed) marks_.start();
  mark();
  // Embedding, copied into every stream.
  for (int64_t s = 0; s < S; ++s) {
    float* x = sc.X.data() + s * N * D;
    cpu::decode_row(params_.embed, tokens[s], 0, D, x);
    for (int64_t i = 1; i < N; ++i) std::copy(x, x + D, x + i * D);
  }
  const HcScratch hs{sc.hc_flat.data(), sc.hc_mixes.data(), sc.hc_pre.data()};
  float* X = sc.X.data();
  float* X2 = sc.X2.data();
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerParams& lp = params_.layers[l];
    stage_first_band(l, tokens, p0, S);
    hc_pre(pool_, lp.hc_attn, c, X, S, hs, sc.post.data(), sc.comb.data(), sc.u.data());
    for (int64_t s = 0; s < S; ++s)
      cpu::rms_norm(sc.u.data() + s * D, D, lp.attn_norm.data(), c.rms_norm_eps, sc.xn.data() + s * D);
    mark();
    attention(pool_, lp, c, states_[l], ring_size_, p0, S, sc.xn.data(), sc, sc.block_out.data());
    hc_post(sc.block_out.data(), X, sc.post.data(), sc.comb.data(), S, c.hc_mult, c.hidden_size, X2);
    std::swap(X, X2);
    mark();

    hc_pre(pool_, lp.hc_ffn, c, X, S, hs, sc.post.data(), sc.comb.data(), sc.u.data());
    for (int64_t s = 0; s < S; ++s)
      cpu::rms_norm(sc.u.data() + s * D, D, lp.ffn_norm.data(), c.rms_norm_eps, sc.xn.data() + s * D);
    mark();
    moe(pool_, lp, c, l, tokens, S, sc.xn.data(), *experts_, layout_, sc, sc.block_out.data(), moe_stats_,
        forced_experts(l, p0, S), options_.expert_parallel.collective ? &options_.expert_parallel : nullptr);
    hc_post(sc.block_out.data(), X, sc.post.data(), sc.comb.data(), S, c.hc_mult, c.hidden_size, X2);
    std::swap(X, X2);
    observe_layer(l, X + (S - 1) * N * D);
    mark();
  }
  position_ += uint64_t(S);
  if (logits && all_logits) output_head(pool_, params_, c, X, S, sc, logits);
  else if (logits) output_head(pool_, params_, c, X + (S - 1) * N * D, 1, sc, logits);
  if (!timed) return;
  mark();
  const double wall = marks_.since_start_ms();
  timelines_.push_back(timeline_from_marks(uint32_t(S), marks_.at_ms(), marks_.at_ms().back(), wall));
}

}  // namespace moepage::ds4
