// The `adapter-prefetch` pager: `paged` (pager.policy, lfru by default) plus a low-rank predictor
// (an HFADPT v1 or v2 file). After layer L the arch hands over its hidden state; the predictor
// scores layer L+1's experts and the pager prefetches the top M through the ordinary hint path, so
// a prefetch never evicts an expert the current token requested and never changes the router's
// choice (the router still decides; a wrong guess costs bandwidth only).
//
// The gate bias: the score is B (A h_L) + the adapter's own bias (HFADPT v2, the intercept of the
// fit in tools/train/adapter_fit.py) without layer L+1's gate bias, because the expert catalog does
// not carry router weights. Each proposal also goes to the trace as prediction events, so
// `moepage simulate` replays exactly these prefetches (lru+prefetch).
//
// Recall@M: predictions counts experts predicted, predictions_hit those the router then chose;
// recall@M = predictions_hit / (top_k x predicted layer-steps) is logged when the pager ends.
#include <algorithm>
#include <span>
#include <vector>

#include "moepage/cpp/plugin_adapter.hpp"
#include "moepage/pager_core/adapter_file.hpp"
#include "moepage/pager_core/adapter_scorer.hpp"
#include "moepage/pager_core/errors.hpp"
#include "paged_pager.hpp"

namespace {

using moepage::pager::PagerError;

constexpr mp_option_def kOptions[] = {
    MOEPAGE_PAGED_PAGER_OPTIONS("lfru"),
    mp::option(MP_OPT_PATH, "adapter", nullptr, "predictor file (HFADPT v1 or v2)"),
    mp::option(MP_OPT_INT, "top_m", "0",
               "experts prefetched per layer; 0 = half of top-k, rounded up (3 for top-6; on the GPU the top 2 "
               "and 3 decoded fastest, each proposal past them costing more copy time than it saved)"),
};

// top_m 0: half of the router's top-k, rounded up. Replaying the adapter's recorded proposals on the
// GPU (12-layer Flash slice, lfru, 12.5-50% of expert bytes), the top 2 and 3 decoded fastest and
// the top 4 slower than the top 3 (bench/results/2026-12-06-one-copy.md call D,
// 2026-12-07-deferral-and-top-m.md): past the few proposals the adapter ranks surest, each one is a
// whole expert on the copy link for a worse chance of use.
uint32_t auto_top_m(uint32_t top_k, uint32_t n_experts) { return std::min(std::max(1u, (top_k + 1) / 2), n_experts); }

moepage::pager::Adapter load_adapter(const mp_pager_create_args& args, const std::string& path) {
  const mp_expert_catalog& c = *args.catalog;
  moepage::pager::AdapterModel model;
  model.n_layers = c.n_layers;
  model.d_model = c.struct_size >= offsetof(mp_expert_catalog, d_model) + sizeof c.d_model ? c.d_model : 0;
  model.n_experts = c.n_experts;
  model.has_experts.assign(c.has_experts, c.has_experts + c.n_layers);
  if (model.d_model == 0)
    throw mp::Error(MP_ERR_UNSUPPORTED,
                    "pager 'adapter-prefetch': the expert catalog gives no d_model to check " + path + " against");
  try {
    return moepage::pager::read_adapter_file(path, model);
  } catch (const PagerError& e) {
    throw mp::Error(e.status(), std::string("pager 'adapter-prefetch': ") + e.what());
  }
}

class AdapterPrefetchPager : public moepage::paging::PagedPager {
 public:
  AdapterPrefetchPager(const mp_pager_create_args& args, const mp::Options& options)
      : PagedPager(args, options, "adapter-prefetch"),
        adapter_path_(options.get_string("adapter")),
        scorer_(load_adapter(args, adapter_path_), catalog().n_layers) {
    const int64_t top_m = options.get_int("top_m");
    if (top_m < 0 || top_m > int64_t(catalog().n_experts))
      throw mp::Error(MP_ERR_INVALID_ARG,
                      mp::format("pager 'adapter-prefetch': option top_m = {}: expected 0 (half of top-k) "
                                 "to {} (the expert count)",
                                 top_m, catalog().n_experts));
    top_m_ = top_m == 0 ? auto_top_m(catalog().top_k, catalog().n_experts) : uint32_t(top_m);
    hidden_.resize(scorer_.d_model());
    scores_.resize(catalog().n_experts);
    predicted_.assign(catalog().n_layers, std::vector<int32_t>(top_m_));
    predicted_n_.assign(catalog().n_layers, 0);
    log().info("predictor {}: rank {}, prefetching the top {} experts of the next layer", adapter_path_, scorer_.rank(),
               top_m_);
  }
  ~AdapterPrefetchPager() {
    if (predicted_steps_ > 0)
      log().info("recall@{} of the predictor: {} of {} routed experts were predicted", top_m_, recall_hits_,
                 routed_in_predicted_);
  }

  // Not offered (ABI 1.11): observe(layer) prefetches into layer + 1, so a layer's residency would
  // change inside a call that names another, which residency's promise rules out.
  mp_status residency(uint32_t, void**, uint32_t, uint64_t*) = delete;

  mp_status acquire(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
    const mp_status s = PagedPager::acquire(layer, experts, n, out);
    if (s == MP_OK) count_recall(layer, experts, n);
    return s;
  }
  // The split acquire counts recall at start, where the request is known (as acquire does).
  mp_status acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
    const mp_status s = PagedPager::acquire_start(layer, experts, n, out);
    if (s == MP_OK) count_recall(layer, experts, n);
    return s;
  }

 private:
  void count_recall(uint32_t layer, const int32_t* experts, uint32_t n) {
    if (layer < predicted_n_.size() && predicted_n_[layer] > 0) {
      const auto predicted = std::span<const int32_t>(predicted_[layer].data(), predicted_n_[layer]);
      uint64_t hit = 0;
      for (uint32_t i = 0; i < n; ++i)
        if (std::find(predicted.begin(), predicted.end(), experts[i]) != predicted.end()) ++hit;
      count_predictions(predicted.size(), hit);
      recall_hits_ += hit;
      routed_in_predicted_ += n;
      ++predicted_steps_;
      predicted_n_[layer] = 0;
    }
  }

 public:
  mp_status observe(uint32_t layer, const float* hidden, uint32_t d_model, mp_stream stream) {
    if (hidden == nullptr || d_model != scorer_.d_model())
      throw mp::Error(MP_ERR_INVALID_ARG,
                      mp::format("pager 'adapter-prefetch': observe(layer {}) got {} hidden values, "
                                 "the adapter {} expects {}",
                                 layer, d_model, adapter_path_, scorer_.d_model()));
    if (!predicts_next(layer)) return MP_OK;
    const mp_device_service* dev = host()->device;
    const float* h = hidden;
    if (dev->kind != MP_DEVICE_CPU) {
      // On a GPU the hidden state is device memory, written on `stream`: wait for it, then copy it
      // into the buffer sized at create (nothing allocated per call).
      mp_status s = dev->stream_synchronize(dev->ctx, stream);
      if (s == MP_OK) s = dev->copy_to_host(dev->ctx, hidden_.data(), hidden, uint64_t(d_model) * sizeof(float));
      if (s != MP_OK)
        throw mp::Error(MP_ERR_DEVICE,
                        mp::format("pager 'adapter-prefetch': cannot copy layer {}'s hidden state to the "
                                   "host ({})",
                                   layer, mp_status_name(s)));
      h = hidden_.data();
    }
    scorer_.score(layer, {h, d_model}, {}, scores_);
    return prefetch_top(layer + 1, scores_);
  }

  // The adapter as b (a h) + bias (ABI 1.10), so a host may score on the device the state lives
  // on and hand over n_experts floats instead of waiting for the state and scoring here.
  mp_status linear_predictor(uint32_t layer, mp_linear_predictor* out) {
    if (out == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pager 'adapter-prefetch': linear_predictor: out is NULL");
    if (!predicts_next(layer)) return MP_ERR_UNSUPPORTED;
    const auto w = scorer_.weights(layer);
    mp_linear_predictor p{};
    p.struct_size = sizeof p;
    p.rank = scorer_.rank();
    p.d_model = scorer_.d_model();
    p.n_experts = scorer_.n_experts();
    p.a = w.a.data();
    p.b = w.b.data();
    p.bias = w.bias.empty() ? nullptr : w.bias.data();
    mp::write_out(out, p, "pager 'adapter-prefetch': linear_predictor");
    return MP_OK;
  }
  mp_status observe_scores(uint32_t layer, const float* scores, uint32_t n) {
    if (scores == nullptr || n != scorer_.n_experts())
      throw mp::Error(MP_ERR_INVALID_ARG,
                      mp::format("pager 'adapter-prefetch': observe_scores(layer {}) got {} "
                                 "scores, the adapter {} scores {} experts",
                                 layer, scores == nullptr ? 0 : n, adapter_path_, scorer_.n_experts()));
    if (!predicts_next(layer))
      throw mp::Error(MP_ERR_INVALID_ARG,
                      mp::format("pager 'adapter-prefetch': observe_scores(layer {}): the adapter {} predicts "
                                 "nothing after that layer (linear_predictor answers MP_ERR_UNSUPPORTED)",
                                 layer, adapter_path_));
    return prefetch_top(layer + 1, {scores, n});
  }

 private:
  bool predicts_next(uint32_t layer) const {
    const uint32_t next = layer + 1;
    return scorer_.predicts_after(layer) && next < catalog().n_layers && catalog().has_experts[next];
  }
  // Prefetches the top M of layer `next`'s scores, traced as predictions.
  mp_status prefetch_top(uint32_t next, std::span<const float> scores) {
    const uint32_t m = scorer_.top_m(scores, top_m_, predicted_[next]);
    predicted_n_[next] = m;
    trace_predictions(next, predicted_[next].data(), m);
    return hint(next, predicted_[next].data(), m);
  }

  std::string adapter_path_;
  moepage::pager::AdapterScorer scorer_;
  uint32_t top_m_ = 0;
  std::vector<float> hidden_, scores_;
  std::vector<std::vector<int32_t>> predicted_;  // [n_layers][top_m] the last prediction for each layer
  std::vector<uint32_t> predicted_n_;
  uint64_t recall_hits_ = 0, routed_in_predicted_ = 0, predicted_steps_ = 0;
};

}  // namespace

MOEPAGE_PLUGIN("adapter-prefetch", "0.2.0",
               mp::make_pager_descriptor<AdapterPrefetchPager>(
                   "adapter-prefetch", "0.2.0",
                   "paged (lfru) plus a predictor that prefetches the next layer's experts",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_PREFETCH, kOptions))
