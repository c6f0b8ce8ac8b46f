// DeepSeek-V4 on the CPU: one sequence, appended to token by token or in chunks of any size.
// forward() of a whole prompt, of the same prompt cut at any boundaries, and token-by-token
// decode give the same logits (to float rounding): every chunk is processed in order against the
// same state (sliding ring, compressor windows, compressed entries, indexer keys).
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "deepseek4/cpu/rope.hpp"
#include "deepseek4/cpu/thread_pool.hpp"
#include "deepseek4/forward/batch_timeline.hpp"
#include "deepseek4/forward/expert_precision.hpp"
#include "deepseek4/forward/expert_source.hpp"
#include "deepseek4/forward/forced_routing.hpp"
#include "deepseek4/forward/moe.hpp"
#include "deepseek4/forward/params.hpp"
#include "deepseek4/forward/prompt_band.hpp"
#include "deepseek4/forward/prompt_shared.hpp"
#include "deepseek4/forward/scratch.hpp"
#include "deepseek4/forward/state.hpp"
#include "deepseek4/forward/weights.hpp"
#include "deepseek4/model/config.hpp"

namespace moepage::ds4 {

struct ModelOptions {
  uint32_t max_context = 4096;  // positions the state holds; forward() past it throws
  uint32_t max_batch = 64;      // tokens processed together; longer inputs are split internally
  // Routing to follow instead of the routers' choice (benchmarks; null: the model's own). Must
  // outlive the model.
  const ForcedRouting* forced_routing = nullptr;
  // GPU only: dense weight products and attention over at least this many tokens run on the matrix
  // cores (bf16 operands, float sums) where the device has them; 0 keeps them on the CUDA cores.
  uint32_t matrix_min_tokens = 8;
  // GPU only: x enters those products as two bf16 parts (about 2^-17 relative) instead of one
  // (2^-9, half the matrix instructions, and routers' near ties may go the other way).
  bool matrix_split = true;
  // GPU only, with matrix_split: the operands of the routed experts' matrix-core products
  // (expert_precision.hpp); without matrix_split they take one bf16 part like the rest.
  ExpertPrecision matrix_expert_precision = ExpertPrecision::Fp16;
  // GPU only: experts that serve one token each (decode) multiply on the matrix cores as well.
  bool matrix_single_token = false;
  // GPU only: the routed experts take the matrix cores once one expert serves this many tokens
  // (0: never).
  uint32_t matrix_min_expert_tokens = 2;
  // GPU only: a decode step over an expert source whose slots never move routes on the device
  // and reports its experts afterwards (no host round trip per layer).
  bool device_routing = true;
  // Run as one rank of an expert-parallel group (expert_parallel.hpp), on the CPU or the GPU; the
  // ownership and the collective must outlive the model. collective null: a single rank.
  ExpertParallel expert_parallel{};
  // GPU only (NVIDIA sm_90+): in a decode step each kernel may start while the previous one of its
  // stream finishes, waiting on the device for its inputs (hip/launch.hpp).
  bool overlap_launches = true;
  // GPU only (NVIDIA): single-token BF16 products on the CUDA cores keep this many steps of weight
  // rows in flight in shared memory (hip/row_gemv_staged.hpp); 0: loaded into registers step by step.
  uint32_t gemv_stages = 3;
  // GPU only (NVIDIA): dense products over at least this many tokens dequantize their weight to bf16
  // and multiply on cuBLAS (hip/library_gemm.hpp); 0: never. From 512 tokens the library is faster
  // than the matrix-core tiles on the H200 (1.02x at 512, 1.09x at 4,096; 0.94x at 256).
  uint32_t library_min_tokens = 512;
  // GPU only (NVIDIA): MiB of device memory in which the library path keeps its dequantized
  // weights between products (hip/library_weight_cache.hpp); 0: dequantized for every product.
  uint32_t library_weight_cache_mib = 0;
  // GPU only (NVIDIA): a prompt attended on the matrix cores writes its output as wo_a's bf16 parts
  // where wo_a goes to the library (hip/library_gemm.hpp LibraryPartsProduct), not as floats.
  bool attention_output_parts = false;
  // GPU only: the expert source observes layer l-1's state once layer l's attention is launched,
  // waiting on a side stream for that state alone, instead of before (when a predictor's wait and
  // host scoring leave the GPU idle).
  bool observe_after_attention = false;
  // GPU only: where the expert source offers a linear predictor of the next layer
  // (GpuExpertSource::linear_predictor), its scores are computed on the device after each layer
  // and only they reach the host, instead of the state being read back and scored there.
  bool predictor_on_device = false;
  // Each prompt batch (two tokens or more) records where its time went, layer by layer
  // (batch_timeline.hpp), for take_timelines(). On the GPU a batch that would not wait for its
  // end (an inner chunk of a long prompt) then does, so its marks can be read.
  bool timeline = false;
  // GPU only: where a prompt batch's shared expert runs (a decode step's: decode_shared).
  PromptShared prompt_shared = PromptShared::Auto;
  // GPU only (NVIDIA): the FP4 experts' fp16 prompt tiles stream their operands through shared
  // memory, several steps in flight (hip/mma_tile_stream.hpp; same bits); false: the register
  // tile, one step ahead (hip/mma_tile.hpp).
  bool matrix_expert_stream = true;
  // GPU only: a paged layer's acquire is finished (its reads waited for, its slots committed or
  // failed closed) once the batch's last layer is queued, not right after its experts are
  // launched: the host queues the next layer while the reads land (hip/moe_finish.hpp). Not on a
  // rank of an expert-parallel group. Off: measured slower on an H100
  // (bench/results/2026-12-07-deferral-and-top-m.md).
  bool defer_acquire_finish = false;
  // GPU only: in a paged decode step of one token every layer's router also builds the token's
  // group record on the device, and a scored layer's router writes the ids straight into mapped
  // host memory (hip/mapped_ids.hpp) instead of a copy and an event; a layer whose experts all hit,
  // in one band, launches from the device's record without the host's upload. In a step where
  // 98% of experts hit, 12% of an H100's time waited for the host
  // (bench/results/2026-12-07-steady-state.md).
  bool direct_hits = true;
  // GPU only: a greedy call queues the next step's front (the embedding of the pick it made on the
  // device, layer 0's attention and both of its mHC sites) before the host waits for the pick, so
  // the device runs on while the pick travels to the host and the caller comes back; a call whose
  // one token is that pick resumes at layer 0's MoE block, any other input recomputes it. Not
  // where layer 0 compresses (its compressor state would run ahead) nor on an expert-parallel rank.
  bool run_ahead = false;
  // GPU only: in a paged decode step of one token whose output the call waits for, each scored
  // layer's router looks its experts up in a device table of the slots the pager reports valid
  // (pager ABI 1.11 residency), computes the hits at once and waits on the device for the host only
  // when one missed; the host queues the step ahead and serves the misses while it runs, so a
  // token whose experts all hit makes no round trip (hip/slot_table.hpp). Needs a pager that offers
  // residency and no predictor reading the state; not on an expert-parallel rank.
  bool slot_table = false;
  // GPU only, with slot_table: the longest the host's reply to one stalled layer may take before a
  // watch lets every stall of the step go and the call fails naming the layer (0: no watch; the
  // stall's own time-out, tens of seconds, is then the only bound).
  uint32_t slot_reply_timeout_ms = 10000;
  // GPU only, with slot_table: how many layers the host queues past the oldest layer whose stall it
  // has not served before it serves that one (waiting for the device to reach it). A layer queues
  // a dozen kernels or more on the compute stream (12-13 resident, H200 trace of 2026-12-07), and
  // the runtime stops a host about a thousand launches ahead of a stream, which while a stall
  // waits for that host would never end (full Flash: 43 layers).
  uint32_t slot_queue_ahead_layers = 8;
  // GPU only: where a decode step's shared expert runs: Beside (a side stream), Urgent (the same at
  // the device's greatest priority) or First (the compute stream, before the router); the same
  // bits in each (forward/prompt_shared.hpp says why it is a choice).
  PromptShared decode_shared = PromptShared::Beside;
  // GPU only: each mHC site's Sinkhorn, which runs on a side stream beside the block after it,
  // runs on a stream of the device's greatest priority, so its one block starts before the waiting
  // blocks of the compute stream's next kernels rather than after them (the same bits). The H200
  // traces show the site after the attention waiting up to 4.4 us for it on three of four layers
  // (bench/results/2026-12-07-h200.md). Not yet measured.
  bool urgent_sinkhorn = false;
};

// The rope of a config's rope parameters (main or compress).
cpu::RopeSpec rope_spec(const RopeParams& r);

// The rope of `r` (the config's main or compress parameters) over the config's rotated head dims.
std::unique_ptr<cpu::Rope> make_rope(const RopeParams& r, const Config& config);

// Throws std::invalid_argument when the expert layout does not fit the config (shapes, encodings,
// parts past the slot). Shared by the CPU and GPU models.
void check_expert_layout(const ExpertLayout& layout, const Config& config);

// What the CPU and GPU models check before they build anything: the config, that there is an
// expert source, positive max_batch and max_context, and the expert layout. Throws
// std::invalid_argument, its message starting with `who` where the check is the model's own.
void check_model_inputs(const Config& config, const ExpertLayout& layout, bool has_expert_source,
                        const ModelOptions& options, const char* who);

// Throws std::length_error when n more tokens at `position` pass max_context and
// std::out_of_range for a token id outside the vocabulary, messages starting with `who`. Shared
// by the CPU and GPU models' forward calls.
void check_forward_input(const Config& config, const ModelOptions& options, uint64_t position, const int32_t* tokens,
                         uint32_t n, const char* who);

class Model {
 public:
  // Checks every tensor against the config (std::invalid_argument naming the tensor) and sizes
  // all state and scratch. `weights` memory, `experts` and `pool` must outlive the model.
  Model(const Config& config, Weights weights, ExpertLayout layout, ExpertSource* experts, cpu::ThreadPool& pool,
        ModelOptions options = {});

  // Forget the sequence (position 0 again). Allocates nothing.
  void reset();

  // Append n tokens. logits_out receives [n, vocab] floats when all_logits, else [vocab] for the
  // last token. Throws std::length_error past max_context, std::out_of_range for a token id
  // outside the vocabulary.
  void forward(const int32_t* tokens, uint32_t n, float* logits_out, bool all_logits);

  uint64_t position() const { return position_; }
  const Config& config() const { return config_; }
  const ModelOptions& options() const { return options_; }
  const MoeStats& moe_stats() const { return moe_stats_; }
  // The timelines of the prompt batches since the last call (ModelOptions::timeline), oldest first.
  std::vector<BatchTimeline> take_timelines() { return std::exchange(timelines_, {}); }

 private:
  void run_batch(const int32_t* tokens, int64_t S, float* logits, bool all_logits);
  void observe_layer(uint32_t layer, const float* streams);
  // [S, k] experts the forced routing gives `layer` for the batch at p0, or null without one.
  const int32_t* forced_experts(uint32_t layer, int64_t p0, int64_t S);
  // Hands the expert source the first band a prompt chunk will ask for at `layer` (prompt_band.hpp).
  void stage_first_band(uint32_t layer, const int32_t* tokens, int64_t p0, int64_t S);

  Config config_;
  Weights weights_;
  ExpertLayout layout_;
  ExpertSource* experts_;
  cpu::ThreadPool& pool_;
  ModelOptions options_;
  std::unique_ptr<cpu::Rope> rope_main_, rope_compress_;
  ModelParams params_;
  std::vector<LayerState> states_;
  int64_t ring_size_ = 0;
  Scratch scratch_;
  uint64_t position_ = 0;
  MoeStats moe_stats_;
  HostMarks marks_;  // ModelOptions::timeline: the batch's marks
  std::vector<BatchTimeline> timelines_;
  PromptBand prompt_band_;
};

}  // namespace moepage::ds4
