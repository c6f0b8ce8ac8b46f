// DeepSeek-V4 on a GPU: the twin of forward/model.hpp's Model with every block on the device.
// Same contract: one sequence, appended to in chunks of any size; a whole prompt, the same prompt
// cut anywhere, and token-by-token decode give the same logits (to float rounding).
//
// Memory: dense weights, rope tables, per-layer state, scratch, the device token buffer and the
// pinned staging are all taken at construction from the model's own arenas; forward() allocates
// nothing. Work runs on the caller's compute stream (the plugin passes the device service's
// stream, which on a HIP device is the native stream). Per forward() call the host waits once, for
// the logits (once per max_batch chunk with all_logits), plus what the MoE block needs: the
// router's ids of a scored layer and a band of experts the pager must refill.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "deepseek4/cpu/rope.hpp"
#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/forward/model.hpp"
#include "deepseek4/forward/moe.hpp"
#include "deepseek4/forward/params.hpp"
#include "deepseek4/forward/prompt_band.hpp"
#include "deepseek4/forward/weights.hpp"
#include "deepseek4/hip/device_arena.hpp"
#include "deepseek4/hip/device_params.hpp"
#include "deepseek4/hip/event_set.hpp"
#include "deepseek4/hip/expert_source.hpp"
#include "deepseek4/hip/hc.hpp"
#include "deepseek4/hip/library_weight_cache.hpp"
#include "deepseek4/hip/stream.hpp"
#include "deepseek4/model/config.hpp"

namespace moepage::ds4::gpu {

struct AttentionScratch;
struct MoeScratch;
class TimedSpans;
class BatchMarks;
class DevicePredictors;

class GpuModel {
 public:
  // Checks every tensor against the config (std::invalid_argument naming the tensor), uploads the
  // dense weights and sizes all state and scratch, on the calling thread's current device, which
  // must be the stream's; every later call binds that device again first. `weights` is read only
  // here; `experts` must outlive the model; `stream` stays the caller's (the model never destroys
  // it).
  GpuModel(const Config& config, const Weights& weights, ExpertLayout layout, GpuExpertSource* experts, Stream stream,
           ModelOptions options = {});
  ~GpuModel();
  GpuModel(const GpuModel&) = delete;
  GpuModel& operator=(const GpuModel&) = delete;

  // Forget the sequence (position 0 again). Allocates nothing.
  void reset();

  // Append n tokens. logits_out (host memory) receives [n, vocab] floats when all_logits, else
  // [vocab] for the last token. Throws std::length_error past max_context, std::out_of_range for
  // a token id outside the vocabulary, GpuError when the runtime fails.
  void forward(const int32_t* tokens, uint32_t n, float* logits_out, bool all_logits);
  // forward() of n tokens, returning the greedy next token (the first index of the largest logit
  // of the last token), picked on the device: only 8 bytes come back instead of the logits.
  // Throws GpuError when a logit is NaN.
  int32_t forward_greedy(const int32_t* tokens, uint32_t n);

  // ModelOptions::run_ahead: how many calls found the next step's front queued for their token
  // (used) and how many found it queued for another token or shape (dropped, recomputed).
  struct RunAheadCounts {
    uint64_t used = 0, dropped = 0;
  };
  const RunAheadCounts& run_ahead_counts() const { return run_ahead_counts_; }

  uint64_t position() const { return position_; }
  const Config& config() const { return config_; }
  const ModelOptions& options() const { return options_; }
  const MoeStats& moe_stats() const { return moe_stats_; }
  // The timelines of the prompt batches since the last call (ModelOptions::timeline), oldest first.
  std::vector<BatchTimeline> take_timelines() { return std::exchange(timelines_, {}); }
  Stream stream() const { return stream_; }
  // Bytes of dense weights on the device, and of everything the model took (weights, state,
  // scratch) from the device.
  uint64_t dense_device_bytes() const { return params_.device_bytes; }
  uint64_t device_bytes() const { return device_.bytes_reserved(); }
  // Bytes the library path keeps of its dequantized weights (ModelOptions::library_weight_cache_mib).
  uint64_t library_cache_bytes() const { return weight_cache_ ? library_weight_cache_bytes(*weight_cache_) : 0; }

 private:
  void allocate_state(int64_t max_batch);
  void upload_forced_routing(int64_t p0, int64_t S);
  // Hands the expert source the first band a prompt chunk will ask for at `layer`
  // (forward/prompt_band.hpp), before its attention: the copies overlap the attention.
  void stage_first_band(uint32_t layer, const int32_t* tokens_host, int64_t S);
  // The last chunk's output: logits to the host (all rows or the last), or the greedy pick.
  struct Output {
    float* logits_host = nullptr;  // null and !greedy: no head at all (an inner chunk)
    bool all_logits = false;
    bool greedy = false;
  };
  void run(const int32_t* tokens, uint32_t n, float* logits_out, bool all_logits, bool greedy);
  // resumed: the batch is the one token whose front (queue_front) the previous call queued.
  void run_batch(const int32_t* tokens_host, const int32_t* tokens_device, int64_t S, const Output& out, bool resumed);
  // A batch's streams from its tokens' embedding (the cursor's start), and one layer's work up to
  // its MoE block: the attention's mHC site, the attention, the MoE's mHC site (with the observe
  // of the layer before). tokens_host null: the layer's first band is not staged here.
  void queue_embedding(const int32_t* tokens_device, int64_t S);
  void queue_attention_half(uint32_t layer, const int32_t* tokens_host, int64_t S);
  // An mHC site on the cursor's streams (folding in the pending hc_post), and the join of the
  // last site's Sinkhorn before anything reads its comb.
  void mhc_site(const GpuHcParams& hp, const float* norm, float* last_mean, int64_t S);
  void join_comb();
  // ModelOptions::run_ahead: whether the next step's front may be queued behind this call's
  // greedy pick (one token fits before max_context, layer 0 keeps no compressor state the front
  // would advance, no expert-parallel group); queue_front queues it (the embedding of the device's
  // pick and layer 0's attention half), and take_front says whether a call's tokens are the ones
  // it was queued for (then the call resumes at layer 0's MoE block). A front queued for another
  // token is simply recomputed: it wrote only scratch and layer 0's window slot of its position,
  // which any token at that position writes again.
  bool can_run_ahead() const;
  void queue_front();
  bool take_front(const int32_t* tokens, uint32_t n);
  // After the batch's output was queued: finishes the acquires the batch deferred
  // (ModelOptions::defer_acquire_finish), waits for the output, then reads what came back with it
  // (the router's faults, the device-routed ids for the pager, the sums' device time). front:
  // the next step's front is queued behind the output before the host waits, for the output only.
  void wait_for_batch(bool front);
  // ModelOptions::timeline, for prompt batches (S > 1): the marks where each block's work is queued
  // (batch_timeline.hpp): the batch's start, a mark, and the end of a batch without output once
  // run_batch queued it (marked, waited for, its timeline kept; wait_for_batch does the same for
  // the others).
  void start_batch_marks(int64_t S);
  void mark_batch();
  void end_unwaited_batch();
  // The MoE block of `layer` on xn_ into block_out_ (a rank's: summed over the group). site_side:
  // the side stream of its mHC site's Sinkhorn, joined at the block's combine (null: nothing).
  void moe_block(uint32_t layer, const int32_t* tokens_host, const int32_t* tokens_device, int64_t S,
                 SideStream* site_side);
  // One rank of an expert-parallel group: the MoE block's partial output [S, D] becomes the sum
  // over the ranks, on the devices when the collective can (NCCL), else through pinned memory.
  void reduce_block_output(int64_t S, uint32_t layer);
  // After the batch's synchronize: the device time of its sums on the devices, into moe_stats_.
  void collect_reduce_time();
  // Hands the expert source layer `layer`'s state in observed_ (ready once `stream` reaches this
  // point), or, with a device predictor for that layer, only the next layer's scores.
  void observe(uint32_t layer, Stream stream);
  const ExpertParallel* expert_parallel() const {
    return options_.expert_parallel.collective ? &options_.expert_parallel : nullptr;
  }

  Config config_;
  int device_index_ = 0;  // the device the model lives on (current at construction)
  ExpertLayout layout_;
  GpuExpertSource* experts_;
  Stream stream_;
  ModelOptions options_;
  std::unique_ptr<cpu::Rope> rope_main_, rope_compress_;
  ModelParams host_params_;  // kept for the host copy of hash routing tables (tid2eid_host)
  // ModelOptions::library_weight_cache_mib: the library path's kept weights (null: none).
  LibraryWeightCachePtr weight_cache_;

  // Arenas first: everything below points into them and must go before they do.
  DeviceArena device_{DeviceArena::Kind::Device};
  DeviceArena pinned_{DeviceArena::Kind::Pinned};
  GpuModelParams params_;
  std::vector<GpuLayerState> states_;
  int64_t ring_size_ = 0;
  int64_t max_batch_ = 0;
  std::unique_ptr<AttentionScratch> attention_scratch_;
  std::unique_ptr<MoeScratch> moe_scratch_;
  GpuHcScratch hc_scratch_;
  std::unique_ptr<SideStream> comb_side_;  // the mHC sites' Sinkhorn, beside the blocks
  // ModelOptions::observe_after_attention: the stream an expert source's observe() waits on,
  // ordered after the mHC site that writes observed_ and nothing else.
  std::unique_ptr<SideStream> observe_side_;
  // ModelOptions::predictor_on_device: the source's linear predictors, on the device (null: off).
  std::unique_ptr<DevicePredictors> predictors_;
  float *X_ = nullptr, *X2_ = nullptr;  // [S, N, D]
  // Where run_batch is in a batch's chain of blocks: the streams (X, the other buffer X2), the
  // post/comb pair (cur) of the block whose hc_post is pending, and whether the last mHC site's
  // Sinkhorn still runs on comb_side_. A member so that a queued front hands it to the next call.
  struct Cursor {
    float *X = nullptr, *X2 = nullptr;
    bool post_pending = false;
    int cur = 0;
    bool comb_pending = false;
  };
  Cursor cursor_;
  // ModelOptions::run_ahead: the token the front queued behind the last greedy pick is for, at
  // position_ (none: no front queued), and the event the host waits on for the pick meanwhile.
  std::optional<int32_t> front_token_;
  std::unique_ptr<EventSet> picked_;
  RunAheadCounts run_ahead_counts_;
  // [S, N], [S, N, N] twice: a site's weights are written while the previous site's hc_post,
  // folded into the same kernel, still reads the other pair.
  float *post_[2] = {nullptr, nullptr}, *comb_[2] = {nullptr, nullptr};
  float *u_ = nullptr, *xn_ = nullptr, *block_out_ = nullptr;  // [S, D]
  float* observed_ = nullptr;                                  // [D]: what the expert source's observe() reads
  float* reduce_staging_ = nullptr;           // [S, D] pinned: an expert-parallel rank's sum through the host
  std::unique_ptr<TimedSpans> reduce_spans_;  // one per layer: a rank's sums on the devices
  // ModelOptions::timeline: a prompt batch's marks, its tokens while it is timed (0: not timed).
  std::unique_ptr<BatchMarks> batch_marks_;
  uint32_t timed_batch_ = 0;
  std::vector<BatchTimeline> timelines_;
  float* logits_ = nullptr;            // [S, vocab]
  int32_t* tokens_ = nullptr;          // [max_context] device copy of the call's ids
  int32_t* tokens_staging_ = nullptr;  // [max_context] pinned
  float* logits_staging_ = nullptr;    // [S, vocab] pinned
  int32_t* greedy_ = nullptr;          // greedy_token's work area; [0..1]: pick, first NaN
  int32_t* greedy_staging_ = nullptr;  // [2] pinned
  // ForcedRouting only: the batch's experts for every layer, [layers, S, k], filled on the host
  // and uploaded once per batch.
  int32_t* forced_ = nullptr;
  int32_t* forced_staging_ = nullptr;
  bool forced_upload_pending_ = false;  // the staging's last upload may not have run yet
  bool stream_busy_ = false;            // a forward() left work in flight (it threw): wait before reusing staging
  uint64_t position_ = 0;
  MoeStats moe_stats_;
  PromptBand prompt_band_;
};

}  // namespace moepage::ds4::gpu
