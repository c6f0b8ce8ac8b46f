// The pager's C calls as deepseek4 uses them, shared by the CPU and GPU expert sources and the
// plugin: status codes become exceptions (mp::Error, keeping the status) naming the call and
// carrying the pager's message.
//
// band(): how many distinct experts one acquire() may ask for. The forward pass fetches a layer's
// experts in bands of this size and is done with a band's slots before it asks for the next band,
// so a band may reuse (evict) the slots of the previous one. A resident pager (or one whose pool
// holds every expert) serves all experts at once; a paged pool serves at most its slots per
// layer, which the pager guarantees to be >= top_k (below top_k is a load error).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "moepage/moepage.h"

namespace moepage::ds4 {

class RoutingReplay;

// When a routing replay hands the pager layer l+1's recorded predictions (arch option
// replay_predictions_at): observe = at observe(l), after layer l (the recorded predictor reads
// layer l's output); acquire = right after layer l's first acquire of the position, before its
// experts launch; launched = at layer l's first experts_launched of the position, once its experts
// were launched and before the host waits for its reads (where no experts_launched comes, as on the
// CPU path, at observe(l)). acquire and launched are what-ifs: the timing a predictor of layer l's
// MoE input would have, with the recorded predictor's guesses.
enum class PredictionTiming { observe, acquire, launched };

class PagerCalls {
 public:
  // Reads the pager's stats once to size the band: every expert when they all fit, else the
  // pool's slots per layer, or band_cap (arch option paged_band; 0: no cap) when smaller, never
  // below top_k. Throws std::runtime_error naming the pager call that failed.
  PagerCalls(const mp_host_api* host, const mp_pager_ref& pager, uint32_t n_experts, uint32_t top_k,
             uint32_t band_cap = 0);

  uint32_t band() const { return band_; }
  const mp_host_api* host() const { return host_; }

  // slots[i] receives the slot base of experts[i] (parts at the catalog's part offsets, which is
  // the ExpertLayout expert_layout(catalog) builds). Returns the event the slots are ready at
  // (NULL when nothing is in flight).
  mp_event acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots);
  // The split acquire (pager.h, ABI 1.5), or plain acquire where the pager lacks it.
  // acquire_start writes slots[i] for every expert and pending[i] = 1 for each whose bytes are
  // still on their way (await it); returns the event the slots are ready at (plain acquire's
  // event on the fallback, NULL on a split pager). acquire_await(index) returns the event expert
  // `index`'s bytes are ready at (NULL: they are). acquire_finish returns once every read landed
  // and throws, with the pager's message naming the part, when one failed: nothing computed
  // from the started slots may then be used.
  bool splits() const { return splits_; }
  // acquire_start / _await / _finish take the plain-acquire path even on a splitting pager (the
  // arch option hits_first: false, an ablation of the split acquire).
  void use_plain_acquire() { splits_ = false; }
  mp_event acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, uint8_t* pending);
  mp_event acquire_await(uint32_t layer, uint32_t index);
  void acquire_finish(uint32_t layer);
  // A band of `layer`'s experts is launched (the GPU path, before it finishes that acquire now or
  // at the step's end): where a replay's predictions go out (PredictionTiming::launched).
  void experts_launched(uint32_t layer);
  // The slots of all n experts of `layer` when the pager keeps them fixed for its life (pager.h,
  // ABI 1.8); false when it does not offer them or answers MP_ERR_UNSUPPORTED (they may move).
  // Counts no access: the caller reports its accesses through acquire afterwards.
  bool fixed_slots(uint32_t layer, const std::byte** slots, uint32_t n);
  // The pager's residency of `layer` (pager.h, ABI 1.11): writes the generation and, with slots
  // non-null (n = the catalog's experts), each expert's valid slot or null; false when the pager
  // offers none or answers MP_ERR_UNSUPPORTED for the layer. Counts no access.
  bool residency(uint32_t layer, const std::byte** slots, uint32_t n, uint64_t& generation);
  // Whether the pager hears of a layer only through calls naming it that the forward makes (its
  // acquires, its stage hints, and a replay's predictions at observe): no observe of a live
  // predictor (it reads the state and prefetches into the next layer) and no prediction hinted from
  // another layer's acquire or launch. A slot lookup on the device needs that (residency's promise).
  bool calls_name_their_layer() const;
  // Forwards to the pager's observe() when it has one (a predictor stages layer + 1). Under a
  // routing replay, hands the pager the replay's recorded predictions for layer + 1 as a hint
  // instead: the hidden state of a replayed model says nothing about the recorded routing.
  void observe(uint32_t layer, const float* hidden, uint32_t d, mp_stream stream);
  // The pager's linear predictor after `layer` (pager.h, ABI 1.10): true and out filled when it
  // offers one for that layer; false when not, or under a routing replay (whose predictions are
  // the recorded ones, handed over at observe).
  bool linear_predictor(uint32_t layer, mp_linear_predictor& out);
  // The scores of that predictor, computed by the caller, in place of observe(layer).
  void observe_scores(uint32_t layer, const float* scores, uint32_t n);
  // Routing replay (null: off): at most `top` of each recorded prediction, for layers below
  // `n_layers`. The predictions are those of the token at `last_position` (set per call).
  // `timing`: when layer + 1's predictions go out (PredictionTiming above).
  void replay_predictions(const RoutingReplay* replay, uint32_t top, uint32_t n_layers,
                          PredictionTiming timing = PredictionTiming::observe);
  void set_last_position(uint64_t position) { last_position_ = position; }
  void begin_token(uint64_t token);
  // Does nothing when the pager has no hint callback.
  void hint(uint32_t layer, std::span<const int32_t> experts);
  // A prompt chunk's first band of `layer` (forward/prompt_band.hpp), given as a hint before the
  // layer's attention; nothing after stage_at_step_start() (the arch option prompt_staging: false).
  void stage(uint32_t layer, std::span<const int32_t> experts) {
    if (staging_) hint(layer, experts);
  }
  void stage_at_step_start() { staging_ = false; }
  bool stages_per_layer() const { return staging_; }

 private:
  // One acquire() or acquire_start() (start = true; pending as for acquire_start): the band
  // checked, the pager's slots handed back, a failure thrown with the call's name.
  mp_event call_acquire(bool start, uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
                        uint8_t* pending);
  [[noreturn]] void fail(const char* call, mp_status status) const;
  // The replay's recorded predictions of `layer` at last_position_, as a hint.
  void hint_recorded(uint32_t layer);
  // hint_recorded(layer + 1) unless it already went out for this layer and position.
  void hint_next_once(uint32_t layer);

  const mp_host_api* host_;
  mp_pager_ref pager_;
  uint32_t band_ = 0;
  bool splits_ = false;
  bool staging_ = true;
  std::vector<void*> raw_slots_;
  const RoutingReplay* replay_ = nullptr;
  uint32_t replay_top_ = 0, n_layers_ = 0;
  PredictionTiming replay_timing_ = PredictionTiming::observe;
  uint64_t last_position_ = 0;
  // The (layer, position) whose next layer's predictions went out at acquire or finish: once per
  // layer and position of a step (begin_token clears it), however many bands the layer takes.
  uint32_t early_layer_ = UINT32_MAX;
  uint64_t early_position_ = 0;
  std::vector<int32_t> predicted_;  // scratch of one prediction hint
};

}  // namespace moepage::ds4
