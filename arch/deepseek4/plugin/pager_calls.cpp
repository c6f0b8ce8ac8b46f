#include "pager_calls.hpp"

#include "moepage/cpp/error.hpp"
#include "routing_replay.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace moepage::ds4 {

PagerCalls::PagerCalls(const mp_host_api* host, const mp_pager_ref& pager, uint32_t n_experts, uint32_t top_k,
                       uint32_t band_cap)
    : host_(host), pager_(pager) {
  if (pager_.vtable == nullptr || pager_.self == nullptr)
    throw std::invalid_argument("arch 'deepseek4': bind_pager was given no pager instance");
  mp_pager_stats stats{};
  stats.struct_size = sizeof stats;
  if (const mp_status s = pager_.vtable->stats(pager_.self, &stats); s != MP_OK) fail("stats", s);
  const bool everything_fits = stats.resident != 0 || stats.slots_per_layer == 0 || stats.slots_per_layer >= n_experts;
  const uint32_t slots = band_cap > 0 ? std::min(stats.slots_per_layer, band_cap) : stats.slots_per_layer;
  band_ = everything_fits ? n_experts : std::max(slots, std::min(top_k, n_experts));
  raw_slots_.resize(band_);
  splits_ = mp_pager_splits_acquire(pager_.vtable) != 0;
}

mp_event PagerCalls::acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
                                   uint8_t* pending) {
  if (!splits_) {
    std::fill_n(pending, n, uint8_t{0});
    return acquire(layer, experts, n, slots);
  }
  return call_acquire(true, layer, experts, n, slots, pending);
}

mp_event PagerCalls::acquire_await(uint32_t layer, uint32_t index) {
  if (!splits_) return nullptr;
  mp_event ready = nullptr;
  if (const mp_status s = pager_.vtable->acquire_await(pager_.self, layer, index, &ready); s != MP_OK)
    fail("acquire_await", s);
  return ready;
}

void PagerCalls::experts_launched(uint32_t layer) {
  // The layer's reads may still be landing; layer + 1's predictions queue behind them.
  if (replay_ && replay_timing_ == PredictionTiming::launched) hint_next_once(layer);
}

void PagerCalls::acquire_finish(uint32_t layer) {
  if (!splits_) return;
  if (const mp_status s = pager_.vtable->acquire_finish(pager_.self, layer); s != MP_OK) fail("acquire_finish", s);
}

bool PagerCalls::fixed_slots(uint32_t layer, const std::byte** slots, uint32_t n) {
  if (!mp_pager_offers_fixed_slots(pager_.vtable)) return false;
  std::vector<void*> raw(n, nullptr);
  const mp_status s = pager_.vtable->fixed_slots(pager_.self, layer, raw.data(), n);
  if (s == MP_ERR_UNSUPPORTED) return false;
  if (s != MP_OK) fail("fixed_slots", s);
  for (uint32_t i = 0; i < n; ++i) {
    if (raw[i] == nullptr)
      throw std::runtime_error("arch 'deepseek4': pager fixed_slots gave layer " + std::to_string(layer) + " expert " +
                               std::to_string(i) + " no slot");
    slots[i] = static_cast<const std::byte*>(raw[i]);
  }
  return true;
}

mp_event PagerCalls::acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) {
  return call_acquire(false, layer, experts, n, slots, nullptr);
}

mp_event PagerCalls::call_acquire(bool start, uint32_t layer, const int32_t* experts, uint32_t n,
                                  const std::byte** slots, uint8_t* pending) {
  if (n > band_)
    throw std::logic_error("arch 'deepseek4': asked the pager for " + std::to_string(n) +
                           " experts at once, more than " + std::to_string(band_));
  mp_acquire_result result{};
  result.struct_size = sizeof result;
  result.slots = raw_slots_.data();
  result.pending = pending;
  const mp_pager_vtable* v = pager_.vtable;
  if (const mp_status s = (start ? v->acquire_start : v->acquire)(pager_.self, layer, experts, n, &result); s != MP_OK)
    fail(start ? "acquire_start" : "acquire", s);
  for (uint32_t i = 0; i < n; ++i) slots[i] = static_cast<const std::byte*>(raw_slots_[i]);
  if (replay_ && replay_timing_ == PredictionTiming::acquire) hint_next_once(layer);  // behind this layer's reads
  return result.ready;
}

void PagerCalls::begin_token(uint64_t token) {
  early_layer_ = UINT32_MAX;  // a new step: every layer's first acquire hints again
  if (const mp_status s = pager_.vtable->begin_token(pager_.self, token); s != MP_OK) fail("begin_token", s);
}

void PagerCalls::hint(uint32_t layer, std::span<const int32_t> experts) {
  const mp_pager_vtable* v = pager_.vtable;
  if (experts.empty() || !MP_HAS_FIELD(v, mp_pager_vtable, hint) || v->hint == nullptr) return;
  if (const mp_status s = v->hint(pager_.self, layer, experts.data(), uint32_t(experts.size())); s != MP_OK)
    fail("hint", s);
}

void PagerCalls::replay_predictions(const RoutingReplay* replay, uint32_t top, uint32_t n_layers,
                                    PredictionTiming timing) {
  replay_ = replay;
  replay_top_ = top;
  n_layers_ = n_layers;
  replay_timing_ = timing;
  early_layer_ = UINT32_MAX;
  predicted_.reserve(top);
}

void PagerCalls::hint_recorded(uint32_t layer) {
  if (layer >= n_layers_ || replay_top_ == 0) return;
  const std::span<const int32_t> p = replay_->predictions(layer, last_position_);
  predicted_.assign(p.begin(), p.begin() + std::min<size_t>(p.size(), replay_top_));
  hint(layer, predicted_);
}

void PagerCalls::hint_next_once(uint32_t layer) {
  if (layer == early_layer_ && last_position_ == early_position_) return;
  early_layer_ = layer;
  early_position_ = last_position_;
  hint_recorded(layer + 1);
}

void PagerCalls::observe(uint32_t layer, const float* hidden, uint32_t d, mp_stream stream) {
  if (replay_) {
    if (replay_timing_ == PredictionTiming::observe) hint_recorded(layer + 1);
    // launched, where the layer's experts_launched never came (the CPU path): the hint goes out now.
    if (replay_timing_ == PredictionTiming::launched) hint_next_once(layer);
    return;
  }
  const mp_pager_vtable* v = pager_.vtable;
  if (!MP_HAS_FIELD(v, mp_pager_vtable, observe) || v->observe == nullptr) return;
  if (const mp_status s = v->observe(pager_.self, layer, hidden, d, stream); s != MP_OK) fail("observe", s);
}

bool PagerCalls::residency(uint32_t layer, const std::byte** slots, uint32_t n, uint64_t& generation) {
  if (!mp_pager_offers_residency(pager_.vtable)) return false;
  // The pager writes void* slots; the forward reads them as bytes (the same pointers).
  static_assert(sizeof(void*) == sizeof(const std::byte*));
  void** raw = slots ? reinterpret_cast<void**>(const_cast<std::byte**>(slots)) : nullptr;
  const mp_status s = pager_.vtable->residency(pager_.self, layer, raw, slots ? n : 0, &generation);
  if (s == MP_ERR_UNSUPPORTED) return false;
  if (s != MP_OK) fail("residency", s);
  return true;
}

bool PagerCalls::calls_name_their_layer() const {
  if (replay_) return replay_timing_ == PredictionTiming::observe;
  const mp_pager_vtable* v = pager_.vtable;
  return !MP_HAS_FIELD(v, mp_pager_vtable, observe) || v->observe == nullptr;
}

bool PagerCalls::linear_predictor(uint32_t layer, mp_linear_predictor& out) {
  if (replay_ || !mp_pager_offers_linear_predictor(pager_.vtable)) return false;
  out = mp_linear_predictor{};
  out.struct_size = sizeof out;
  const mp_status s = pager_.vtable->linear_predictor(pager_.self, layer, &out);
  if (s == MP_ERR_UNSUPPORTED) return false;
  if (s != MP_OK) fail("linear_predictor", s);
  return true;
}

void PagerCalls::observe_scores(uint32_t layer, const float* scores, uint32_t n) {
  if (!mp_pager_offers_linear_predictor(pager_.vtable))
    throw std::logic_error("arch 'deepseek4': observe_scores on a pager that offers no linear predictor");
  if (const mp_status s = pager_.vtable->observe_scores(pager_.self, layer, scores, n); s != MP_OK)
    fail("observe_scores", s);
}

void PagerCalls::fail(const char* call, mp_status status) const {
  const char* msg = pager_.vtable->last_error ? pager_.vtable->last_error(pager_.self) : nullptr;
  // mp::Error keeps the pager's status: forward() returns it unchanged (status.h).
  throw mp::Error(status, std::string("pager ") + call + " failed (" + mp_status_name(status) +
                              "): " + (msg && *msg ? msg : "no message"));
}

}  // namespace moepage::ds4
