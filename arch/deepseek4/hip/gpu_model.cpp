#include "deepseek4/hip/gpu_model.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "deepseek4/hip/attention.hpp"
#include "deepseek4/hip/attention_scratch.hpp"
#include "deepseek4/hip/device_marks.hpp"
#include "deepseek4/hip/device_predictor.hpp"
#include "deepseek4/hip/head.hpp"
#include "deepseek4/hip/launch_mode.hpp"
#include "deepseek4/hip/moe.hpp"
#include "deepseek4/hip/moe_finish.hpp"
#include "deepseek4/hip/moe_scratch.hpp"
#include "deepseek4/hip/moe_slot_table.hpp"
#include "deepseek4/hip/ops.hpp"
#include "deepseek4/hip/timed_spans.hpp"

namespace moepage::ds4::gpu {

GpuModel::GpuModel(const Config& config, const Weights& weights, ExpertLayout layout, GpuExpertSource* experts,
                   Stream stream, ModelOptions options)
    : config_(config),
      layout_(layout),
      experts_(experts),
      stream_(stream),
      options_(options),
      prompt_band_(config.n_routed_experts, config.num_experts_per_tok) {
  check_model_inputs(config_, layout_, experts_ != nullptr, options_, "ds4 gpu model");
  if (stream_ == nullptr) throw std::invalid_argument("ds4 gpu model: no compute stream");
  device_index_ = current_device();
  rope_main_ = make_rope(config_.rope_main, config_);
  rope_compress_ = make_rope(config_.rope_compress, config_);
  host_params_ = prepare_params(config_, weights, *rope_main_, *rope_compress_);
  params_ = upload_params(host_params_, config_, *rope_main_, *rope_compress_, options_.max_context, device_);
  // The assignment moved the rope tables' descriptors: point every layer at this object's copies.
  params_.gemm.matrix_min_tokens = options_.matrix_min_tokens;
  params_.gemm.expert_min_tokens = options_.matrix_min_expert_tokens;
  params_.gemm.split = options_.matrix_split;
  params_.gemm.expert_precision = options_.matrix_split ? options_.matrix_expert_precision : ExpertPrecision::Bf16;
  params_.gemm.single_token = options_.matrix_single_token;
  params_.gemm.expert_stream = options_.matrix_expert_stream;
  params_.gemm.gemv_stages = int(options_.gemv_stages);
  params_.gemm.library_min_tokens = int64_t(options_.library_min_tokens);
  weight_cache_ = make_library_weight_cache(uint64_t(options_.library_weight_cache_mib) << 20);
  params_.gemm.weight_cache = weight_cache_.get();
  params_.gemm.attention_parts = options_.attention_output_parts;
  for (size_t l = 0; l < params_.layers.size(); ++l) {
    GpuLayerParams& lp = params_.layers[l];
    lp.rope = lp.kind == AttnKind::Sliding ? &params_.rope_main : &params_.rope_compress;
    lp.gemm = params_.gemm;
    const std::vector<float>& norm = host_params_.layers[l].ffn_norm;
    if (lp.gemm.expert_precision == ExpertPrecision::Fp16 &&
        !fp16_holds_expert_inputs(norm.data(), norm.size(), config_.swiglu_limit))
      lp.gemm.expert_precision = ExpertPrecision::SplitBf16;
  }
  allocate_state(std::min<int64_t>(options_.max_batch, options_.max_context));
  if (options_.predictor_on_device) {
    predictors_ = std::make_unique<DevicePredictors>(*experts_, config_.num_hidden_layers, config_.hidden_size,
                                                     config_.n_routed_experts, device_, pinned_);
    if (predictors_->count() == 0) predictors_.reset();  // the source scores nothing linearly
  }
}

GpuModel::~GpuModel() {
  // Kernels of a forward() that threw may still read the arenas: let them finish first.
  try {
    set_current_device(device_index_);
    synchronize(stream_);
  } catch (const GpuError&) {
    // The runtime is already in error; freeing is all that is left.
  }
}

void GpuModel::allocate_state(int64_t max_batch) {
  const Config& c = config_;
  const int64_t ctx = options_.max_context, N = c.hc_mult, D = c.hidden_size, V = c.vocab_size;
  max_batch_ = max_batch;
  ring_size_ = std::min<int64_t>(ctx, c.sliding_window + max_batch - 1);
  states_.resize(c.num_hidden_layers);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    const GpuLayerParams& lp = params_.layers[l];
    GpuLayerState& st = states_[l];
    st.ring = device_.take<float>(uint64_t(ring_size_) * c.head_dim);
    if (lp.kind == AttnKind::Sliding) continue;
    const int64_t entries = ctx / lp.comp.ratio;
    init_compressor_state(lp.comp, entries, device_, st.comp);
    if (lp.kind == AttnKind::CSA) init_compressor_state(lp.index_comp, entries, device_, st.index_comp);
  }
  attention_scratch_ = allocate_attention_scratch(c, params_, max_batch, ctx, device_, pinned_);
  moe_scratch_ = allocate_moe_scratch(c, max_batch, device_, pinned_);
  moe_scratch_->prompt_shared = options_.prompt_shared;
  moe_scratch_->decode_shared = options_.decode_shared;
  moe_scratch_->defer_finish = options_.defer_acquire_finish;
  if (options_.direct_hits)
    moe_scratch_->mapped_ids =
        std::make_unique<MappedIds>(uint32_t(c.num_hidden_layers), uint32_t(c.num_experts_per_tok));
  if (options_.slot_table)
    moe_scratch_->slot_stalls = std::make_unique<SlotStalls>(
        uint32_t(c.num_hidden_layers), uint32_t(c.num_experts_per_tok), uint32_t(c.n_routed_experts),
        std::chrono::milliseconds(options_.slot_reply_timeout_ms));
  if (options_.prompt_shared == PromptShared::Urgent || options_.decode_shared == PromptShared::Urgent)
    moe_scratch_->urgent_side.emplace(true);
  hc_scratch_ = allocate_hc_scratch(c, max_batch, device_);
  comb_side_ = std::make_unique<SideStream>(options_.urgent_sinkhorn);
  if (options_.observe_after_attention) observe_side_ = std::make_unique<SideStream>();
  X_ = device_.take<float>(uint64_t(max_batch * N * D));
  X2_ = device_.take<float>(uint64_t(max_batch * N * D));
  for (int i = 0; i < 2; ++i) {
    post_[i] = device_.take<float>(uint64_t(max_batch * N));
    comb_[i] = device_.take<float>(uint64_t(max_batch * N * N));
  }
  u_ = device_.take<float>(uint64_t(max_batch * D));
  xn_ = device_.take<float>(uint64_t(max_batch * D));
  block_out_ = device_.take<float>(uint64_t(max_batch * D));
  observed_ = device_.take<float>(uint64_t(D));
  if (const ExpertParallel* ep = expert_parallel()) {
    // A rank sums on the devices (timed there) or through pinned memory.
    if (ep->collective->reduces_on_device()) reduce_spans_ = std::make_unique<TimedSpans>(c.num_hidden_layers);
    else reduce_staging_ = pinned_.take<float>(uint64_t(max_batch * D));
  }
  if (options_.timeline) batch_marks_ = std::make_unique<BatchMarks>(2 + 4 * config_.num_hidden_layers);
  if (options_.run_ahead) picked_ = std::make_unique<EventSet>(1);
  logits_ = device_.take<float>(uint64_t(max_batch * V));
  tokens_ = device_.take<int32_t>(uint64_t(ctx));
  tokens_staging_ = pinned_.take<int32_t>(uint64_t(ctx));
  logits_staging_ = pinned_.take<float>(uint64_t(max_batch * V));
  greedy_ = device_.take<int32_t>(uint64_t(kGreedyWorkInts));  // zero-filled by the arena
  greedy_staging_ = pinned_.take<int32_t>(2);
  if (options_.forced_routing) {
    const uint64_t ints = uint64_t(c.num_hidden_layers) * uint64_t(max_batch) * c.num_experts_per_tok;
    forced_ = device_.take<int32_t>(ints);
    forced_staging_ = pinned_.take<int32_t>(ints);
  }
}

// The forced routing of a batch at p0, every layer, in one upload. A previous batch's upload
// that has not run yet still reads the staging: wait for it first (only calls that return no
// output leave one behind).
void GpuModel::upload_forced_routing(int64_t p0, int64_t S) {
  const Config& c = config_;
  const int64_t k = c.num_experts_per_tok;
  if (forced_upload_pending_) synchronize(stream_);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l)
    for (int64_t s = 0; s < S; ++s)
      copy_forced_experts(*options_.forced_routing, c, l, uint64_t(p0 + s), forced_staging_ + (l * S + s) * k);
  upload_async(forced_, forced_staging_, uint64_t(c.num_hidden_layers * S * k) * sizeof(int32_t), stream_);
  forced_upload_pending_ = true;
}

void GpuModel::reset() {
  set_current_device(device_index_);
  for (auto& st : states_) st.reset();
  position_ = 0;
  if (std::exchange(front_token_, std::nullopt)) ++run_ahead_counts_.dropped;
}

void GpuModel::forward(const int32_t* tokens, uint32_t n, float* logits_out, bool all_logits) {
  run(tokens, n, logits_out, all_logits, false);
}

int32_t GpuModel::forward_greedy(const int32_t* tokens, uint32_t n) {
  if (n == 0) throw std::invalid_argument("ds4 gpu model: a greedy pick needs at least one token");
  run(tokens, n, nullptr, false, true);
  if (greedy_staging_[1] >= 0) throw GpuError("ds4 gpu model: logit " + std::to_string(greedy_staging_[1]) + " is NaN");
  return greedy_staging_[0];
}

void GpuModel::run(const int32_t* tokens, uint32_t n, float* logits_out, bool all_logits, bool greedy) {
  if (n == 0) return;
  check_forward_input(config_, options_, position_, tokens, n, "ds4 gpu model");
  set_current_device(device_index_);
  if (stream_busy_) synchronize(stream_);
  stream_busy_ = true;
  const bool resumed = take_front(tokens, n);
  // The whole call's ids go up in one copy (n <= max_context - position fits the buffers); the
  // MoE block reads the host copy for hash routing.
  std::copy(tokens, tokens + n, tokens_staging_);
  upload_async(tokens_, tokens_staging_, uint64_t(n) * sizeof(int32_t), stream_);
  const int64_t V = config_.vocab_size;
  for (uint32_t at = 0; at < n;) {
    const int64_t S = std::min<int64_t>(max_batch_, n - at);
    const bool last = at + S == n;
    Output out;
    out.logits_host = all_logits ? logits_out + int64_t(at) * V : last ? logits_out : nullptr;
    out.all_logits = all_logits;
    out.greedy = greedy && last;
    // A decode step's kernels are short: overlapped, each hides its launch and its blocks' start
    // behind the previous one. A prompt batch's are long, and there the next kernel's waiting
    // blocks cost more than that (H200: prefill 2-5% slower overlapped), so it launches plainly.
    const OverlappedLaunches overlapped(options_.overlap_launches && S == 1);
    start_batch_marks(S);
    run_batch(tokens_staging_ + at, tokens_ + at, S, out, resumed);
    if (!out.logits_host && !out.greedy) end_unwaited_batch();
    at += uint32_t(S);
  }
  // A call without output has not waited for its batches: the router's fault record must still
  // be read before the call returns, so a non-finite score never passes silently.
  if (!logits_out && !greedy) {  // the last batch queued the record's copy
    synchronize(stream_);
    forced_upload_pending_ = false;
    throw_if_router_fault(*moe_scratch_, stream_);
  }
  stream_busy_ = false;
}

void GpuModel::stage_first_band(uint32_t layer, const int32_t* tokens_host, int64_t S) {
  const Config& c = config_;
  const GpuLayerParams& lp = params_.layers[layer];
  const uint32_t band = experts_->max_batch();
  std::span<const int32_t> first;
  if (forced_) first = prompt_band_.first_band(forced_staging_ + int64_t(layer) * S * c.num_experts_per_tok, S, band);
  else if (lp.mlp == MlpKind::HashMoe && lp.tid2eid_host && tokens_host)
    first = prompt_band_.first_band_hashed(lp.tid2eid_host, c.vocab_size, tokens_host, S, band);
  else if (lp.mlp != MlpKind::HashMoe) first = prompt_band_.first_band(nullptr, S, band);
  if (!first.empty()) experts_->stage(layer, first);
}

void GpuModel::run_batch(const int32_t* tokens_host, const int32_t* tokens_device, int64_t S, const Output& out,
                         bool resumed) {
  const Config& c = config_;
  const int64_t N = c.hc_mult, D = c.hidden_size, V = c.vocab_size;
  const int64_t p0 = int64_t(position_);
  moe_scratch_->position0 = p0;
  // A decode step whose output the call waits for may route on the device (moe.hip): its ids
  // reach the pager after the synchronize below.
  clear_device_routing(*moe_scratch_);
  // Expert-parallel ranks route on the host: each keeps only the experts it owns.
  moe_scratch_->device_routing =
      options_.device_routing && !expert_parallel() && S == 1 && (out.greedy || out.logits_host != nullptr);
  // A decode step waited for may look its paged experts up on the device (slot_table.hpp); a
  // predictor that reads the state would have the host wait for the device while it queues.
  MoeScratch& ms = *moe_scratch_;
  ms.slot_lookup = ms.slot_stalls && !expert_parallel() && S == 1 && (out.greedy || out.logits_host != nullptr) &&
                   !predictors_ && experts_->allows_slot_lookup();
  if (ms.slot_lookup && ms.slot_stalls->aborted()) {  // a failed step's stalls gave up: they are done
    synchronize(stream_);
    ms.slot_stalls->clear_abort();
  }
  ms.slowest_reply_ms = 0;
  if (options_.forced_routing) upload_forced_routing(p0, S);
  const DropOwedAcquires owed{ms, *experts_};  // deferred finishes, if the batch throws
  const AbandonSlotStalls stalls{ms};          // and stalls never served
  if (!resumed) queue_embedding(tokens_device, S);
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    // A resumed batch's layer 0 ran up to its MoE block in the previous call: only the staging of
    // its first band waited for the token.
    if (resumed && l == 0) stage_first_band(0, tokens_host, S);
    else queue_attention_half(l, tokens_host, S);
    moe_block(l, tokens_host, tokens_device, S,
              std::exchange(cursor_.comb_pending, false) ? comb_side_.get() : nullptr);
    mark_batch();
    // The host keeps at most slot_queue_ahead_layers layers queued past a stall it has not served:
    // the runtime stops a host about a thousand launches ahead of its stream, and a host stopped
    // there while the device waits for it in a stall would wait for each other.
    // And any stall the device has reached already: its reads start now, not once the queue is full.
    if (ms.slot_lookup) {
      const uint32_t ahead = options_.slot_queue_ahead_layers;
      if (l >= ahead) serve_slot_stalls(ms, *experts_, moe_stats_, stream_, l - ahead);
      serve_arrived_slot_stalls(ms, *experts_, moe_stats_, stream_);
    }
  }
  join_comb();
  position_ += uint64_t(S);
  const int64_t rows = out.all_logits ? S : 1, first = S - rows;
  float* X = cursor_.X;
  float* X2 = cursor_.X2;
  const int cur = cursor_.cur;
  const bool post_pending = cursor_.post_pending;
  // Every batch leaves the router's record on its way back; the batches that wait check it.
  fetch_router_fault(*moe_scratch_, stream_);
  if (!out.logits_host && !out.greedy) {
    if (post_pending) {  // no head: the last block's hc_post runs alone for the predictor's view
      hc_post(block_out_, X, post_[cur], comb_[cur], S, c.hc_mult, c.hidden_size, X2, stream_);
      stream_mean(X2 + (S - 1) * N * D, int32_t(N), D, observed_, stream_);
      observe(c.num_hidden_layers - 1, stream_);
    }
    finish_owed_acquires(*moe_scratch_, *experts_);
    return;
  }
  // The head reads only its rows' streams after this batch, so the last block's hc_post folds into
  // the head's mHC kernel for those rows (and gives the predictor its mean on the way).
  HcInput in;
  in.X = X + first * N * D;
  if (post_pending) {
    in.block_out = block_out_ + first * D;
    in.post = post_[cur] + first * N;
    in.comb = comb_[cur] + first * N * N;
    in.Xout = X2 + first * N * D;
    in.last_mean = observed_;
  }
  output_head(params_, c, in, rows, hc_scratch_, u_, xn_, logits_, stream_);
  if (post_pending) observe(c.num_hidden_layers - 1, stream_);
  if (out.greedy) {
    greedy_token(logits_ + (rows - 1) * V, V, greedy_, stream_);
    download_async(greedy_staging_, greedy_, 2 * sizeof(int32_t), stream_);
  } else {
    download_async(logits_staging_, logits_, uint64_t(rows * V) * sizeof(float), stream_);
  }
  wait_for_batch(out.greedy && can_run_ahead());
  if (!out.greedy) std::memcpy(out.logits_host, logits_staging_, size_t(rows * V) * sizeof(float));
}

void GpuModel::queue_embedding(const int32_t* tokens_device, int64_t S) {
  cursor_ = Cursor{X_, X2_};
  embed(params_.embed, tokens_device, S, config_.hc_mult, cursor_.X, stream_);
}

void GpuModel::queue_attention_half(uint32_t l, const int32_t* tokens_host, int64_t S) {
  const GpuLayerParams& lp = params_.layers[l];
  // A predictor sees the mean of the streams of the batch's last token after each layer, as on
  // the CPU: for layer l - 1 the site below computes it while finishing that layer's hc_post.
  mhc_site(lp.hc_attn, lp.attn_norm, l > 0 ? observed_ : nullptr, S);
  // Late: the attention is queued first, and observe() waits for the site above only (a predictor
  // that reads the state back then scores while the GPU runs the attention).
  const bool observe_late = l > 0 && observe_side_ != nullptr;
  const Stream observe_stream = observe_late ? observe_side_->fork(stream_) : stream_;
  if (l > 0 && !observe_late) observe(l - 1, stream_);
  if (tokens_host) stage_first_band(l, tokens_host, S);
  attention(lp, config_, states_[l], ring_size_, int64_t(position_), S, xn_, *attention_scratch_, block_out_, stream_);
  mark_batch();
  mhc_site(lp.hc_ffn, lp.ffn_norm, nullptr, S);
  if (observe_late) observe(l - 1, observe_stream);
}

// Each block's hc_post is folded into the next mHC site's weights kernel (which reads X, mixes in
// block_out_ and writes X2), the last one into the head's. A site's Sinkhorn runs on comb_side_
// beside the block after it; whatever reads its comb (the next site, the head, a lone hc_post)
// joins first.
void GpuModel::mhc_site(const GpuHcParams& hp, const float* norm, float* last_mean, int64_t S) {
  join_comb();
  Cursor& k = cursor_;
  HcInput in;
  in.X = k.X;
  if (k.post_pending) {
    in.block_out = block_out_;
    in.post = post_[k.cur];
    in.comb = comb_[k.cur];
    in.Xout = k.X2;
    in.last_mean = last_mean;
    std::swap(k.X, k.X2);
  }
  k.cur ^= 1;
  ds4::gpu::hc_site(hp, config_, in, S, hc_scratch_, post_[k.cur], comb_[k.cur], norm, xn_, stream_, comb_side_.get());
  k.post_pending = true;
  k.comb_pending = true;
  mark_batch();  // the timeline's site mark
}

void GpuModel::join_comb() {
  if (cursor_.comb_pending) comb_side_->join(stream_);
  cursor_.comb_pending = false;
}

bool GpuModel::can_run_ahead() const {
  return options_.run_ahead && !expert_parallel() && config_.num_hidden_layers > 0 &&
         params_.layers[0].kind == AttnKind::Sliding && position_ < options_.max_context;
}

// One token at position_, its id the pick greedy_token left in greedy_[0]; the front's launches
// follow the pick's download, so the host's wait for the pick is no wait for them.
void GpuModel::queue_front() {
  queue_embedding(greedy_, 1);
  queue_attention_half(0, nullptr, 1);
}

bool GpuModel::take_front(const int32_t* tokens, uint32_t n) {
  const std::optional<int32_t> queued = std::exchange(front_token_, std::nullopt);
  if (!queued) return false;
  const bool match = n == 1 && tokens[0] == *queued;
  ++(match ? run_ahead_counts_.used : run_ahead_counts_.dropped);
  return match;
}

void GpuModel::start_batch_marks(int64_t S) {
  timed_batch_ = batch_marks_ && S > 1 ? uint32_t(S) : 0;
  if (timed_batch_) batch_marks_->start(stream_);
}

void GpuModel::mark_batch() {
  if (timed_batch_) batch_marks_->mark(stream_);
}

void GpuModel::end_unwaited_batch() {
  if (!timed_batch_) return;
  batch_marks_->mark(stream_);
  synchronize(stream_);  // its marks are read before the next batch records them again
  timelines_.push_back(batch_marks_->timeline(std::exchange(timed_batch_, 0)));
}

void GpuModel::observe(uint32_t layer, Stream stream) {
  if (predictors_ && predictors_->has(layer)) predictors_->observe(layer, observed_, stream);
  else experts_->observe(layer, observed_, uint32_t(config_.hidden_size), stream);
}

void GpuModel::wait_for_batch(bool front) {
  finish_owed_acquires(*moe_scratch_, *experts_);  // the host waits for reads that landed long ago
  fetch_device_routing(*moe_scratch_, stream_);
  if (timed_batch_) batch_marks_->mark(stream_);  // the end: everything queued
  if (front) {
    picked_->record(0, stream_);
    const uint32_t timed = std::exchange(timed_batch_, 0);  // the front is no part of a timed batch
    queue_front();
    timed_batch_ = timed;
    serve_slot_stalls(*moe_scratch_, *experts_, moe_stats_, stream_);
    picked_->host_wait(0);
  } else {
    serve_slot_stalls(*moe_scratch_, *experts_, moe_stats_, stream_);
    synchronize(stream_);
  }
  if (timed_batch_) timelines_.push_back(batch_marks_->timeline(std::exchange(timed_batch_, 0)));
  forced_upload_pending_ = false;
  collect_reduce_time();
  throw_if_router_fault(*moe_scratch_, stream_);
  throw_if_stalls_gave_up(*moe_scratch_);
  account_device_routing(*moe_scratch_, *experts_);
  // A NaN pick fails the call: its front is for no token the caller can pass.
  if (front && greedy_staging_[1] < 0) front_token_ = greedy_staging_[0];
}

void GpuModel::moe_block(uint32_t layer, const int32_t* tokens_host, const int32_t* tokens_device, int64_t S,
                         SideStream* site_side) {
  const Config& c = config_;
  // The combine waits on the shared expert's side stream anyway; joining the site's Sinkhorn there
  // too lets the next site keep its overlapped launch.
  moe_scratch_->combine_joins_too = site_side;
  const int64_t forced_at = int64_t(layer) * S * c.num_experts_per_tok;
  const ExpertParallel* ep = expert_parallel();
  try {
    moe(params_.layers[layer], c, layer, tokens_host, tokens_device, S, xn_, *experts_, layout_, *moe_scratch_,
        block_out_, moe_stats_, stream_, forced_ ? forced_staging_ + forced_at : nullptr,
        forced_ ? forced_ + forced_at : nullptr, ep);
    if (ep) reduce_block_output(S, layer);
  } catch (const std::exception& e) {
    // The other ranks must not wait in the collective for this one.
    if (ep) ep->collective->abort("layer " + std::to_string(layer) + ": " + e.what());
    throw;
  }
}

void GpuModel::reduce_block_output(int64_t S, uint32_t layer) {
  Collective& group = *options_.expert_parallel.collective;
  const uint64_t n = uint64_t(S) * config_.hidden_size;
  if (group.reduces_on_device()) {
    reduce_spans_->start(layer, stream_);
    group.all_reduce_sum_device(block_out_, n, stream_);
    reduce_spans_->end(layer, stream_);
    return;
  }
  // Through the host: the staging's previous upload ran before this download on the stream, and
  // the host writes the staging only after the synchronize.
  const auto start = std::chrono::steady_clock::now();
  download_async(reduce_staging_, block_out_, n * sizeof(float), stream_);
  synchronize(stream_);
  group.all_reduce_sum(reduce_staging_, n);
  upload_async(block_out_, reduce_staging_, n * sizeof(float), stream_);
  ++moe_stats_.collective_calls;
  moe_stats_.collective_ns +=
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

void GpuModel::collect_reduce_time() {
  if (!reduce_spans_) return;
  const TimedSpans::Total t = reduce_spans_->collect();
  moe_stats_.collective_calls += t.spans;
  moe_stats_.collective_ns += t.ns;
}

}  // namespace moepage::ds4::gpu
