// The forward pass behind the deepseek4 plugin, whichever device runs it. bind_pager builds one
// backend over the pager: the CPU backend (cpu_backend.cpp, always built) or, when the host's
// device service is a HIP device, the GPU backend (gpu_backend.cpp, built only with
// MOEPAGE_GPU != none). The plugin class talks to this interface only, so it has no device code.
//
// Errors: a device failure (a GPU runtime error) is DeviceError, which the plugin reports as
// MP_ERR_DEVICE; std::length_error past max_context and std::out_of_range for a token outside the
// vocabulary as the models throw them; anything else (an expert read) as std::runtime_error.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "deepseek4/forward/batch_timeline.hpp"
#include "deepseek4/forward/expert_parallel.hpp"
#include "deepseek4/forward/expert_precision.hpp"
#include "deepseek4/forward/forced_routing.hpp"
#include "deepseek4/forward/prompt_shared.hpp"
#include "loaded_checkpoint.hpp"
#include "moepage/moepage.h"
#include "pager_calls.hpp"

namespace moepage::ds4 {

struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ForwardBackend {
 public:
  virtual ~ForwardBackend() = default;

  // Appends n tokens; logits receives [n, vocab] floats when all_logits, else [vocab] for the last.
  virtual void forward(const int32_t* tokens, uint32_t n, float* logits, bool all_logits) = 0;
  // Appends n tokens and returns the first index of the last token's largest logit (a NaN logit
  // is an error). The GPU picks on the device, so only the index comes back.
  virtual int32_t forward_greedy(const int32_t* tokens, uint32_t n) = 0;
  // Position 0 again; allocates nothing.
  virtual void reset() = 0;
  virtual uint64_t position() const = 0;
  // The routed-expert counters of `out` (routed_experts, and routed_timed/routed_ns where the
  // backend can time the experts without a device sync), and a rank's collective counters.
  virtual void routed_stats(mp_arch_stats& out) const = 0;
  // The prompt batches' timelines since the last call (BackendInputs::timeline), oldest first.
  virtual std::vector<BatchTimeline> take_timelines() = 0;
};

// What every backend is built from. `pager`, `model` and `host` must outlive the backend.
struct BackendInputs {
  const mp_host_api* host = nullptr;
  PagerCalls* pager = nullptr;
  const LoadedCheckpoint* model = nullptr;
  uint32_t max_context = 0;                       // positions one sequence may hold
  uint32_t max_batch = 0;                         // tokens processed together
  uint32_t threads = 0;                           // CPU compute threads; 0 = all cores
  const ForcedRouting* forced_routing = nullptr;  // routing replay (benchmarks), or null
  uint32_t matrix_min_tokens = 8;                 // GPU: dense products, attention from this many tokens
  bool matrix_split = true;                       // GPU: x as two bf16 parts on the matrix cores
  ExpertPrecision matrix_expert_precision = ExpertPrecision::Fp16;  // GPU: the routed experts' operands
  bool matrix_single_token = false;       // GPU: single-token expert products on the matrix cores
  uint32_t matrix_min_expert_tokens = 2;  // GPU: experts on the matrix cores from this many tokens
  bool device_routing = true;             // GPU: decode over fixed slots routes on the device
  ExpertParallel expert_parallel{};       // one rank of a group (collective null: alone)
  bool overlap_launches = true;           // GPU: kernels start as the previous one finishes
  uint32_t gemv_stages = 3;               // GPU: single-token BF16 products' steps in flight (0: registers)
  uint32_t library_min_tokens = 512;      // GPU: dense products from this many tokens on cuBLAS (0: never)
  uint32_t library_weight_cache_mib = 0;  // GPU: MiB kept of the library path's dequantized weights
  bool attention_output_parts = false;    // GPU: prompt attention writes wo_a's library parts
  bool observe_after_attention = false;   // GPU: a predictor's observe after the next attention's launch
  bool predictor_on_device = false;       // GPU: a linear predictor's scores computed on the device
  bool timeline = false;                  // each prompt batch's time per layer, for take_timelines()
  // GPU: where a prompt batch's shared expert runs.
  PromptShared prompt_shared = PromptShared::Auto;
  bool matrix_expert_stream = true;        // GPU: the FP4 experts' prompt tiles stream through shared memory
  bool defer_acquire_finish = false;       // GPU: a paged layer's reads waited for at the batch's end
  bool direct_hits = true;                 // GPU: paged decode's ids and all-hit records without uploads
  bool run_ahead = false;                  // GPU: a greedy call queues the next step's front before its wait
  bool slot_table = false;                 // GPU: paged decode looks its experts up in a device slot table
  uint32_t slot_reply_timeout_ms = 10000;  // GPU, slot_table: a reply's deadline (0: no watch)
  uint32_t slot_queue_ahead_layers = 8;    // GPU, slot_table: layers queued past an unserved stall
  bool urgent_sinkhorn = false;            // GPU: the mHC Sinkhorns at the greatest priority
  // GPU: where a decode step's shared expert runs.
  PromptShared decode_shared = PromptShared::Beside;
};

// The backend for the host's device: the GPU one on a HIP device, the CPU one otherwise. Throws
// mp::Error: MP_ERR_UNSUPPORTED for a HIP device in a CPU-only build (naming the build option),
// MP_ERR_DEVICE when the model does not fit on the device, MP_ERR_INVALID_ARG for weights the
// config does not fit.
std::unique_ptr<ForwardBackend> make_forward_backend(const BackendInputs& in);

// What the plugin's descriptor says: its description names the devices the backends built into
// this library run on ("... (CPU)" or "... (CPU or HIP GPU)"); MP_CAP_CPU, and MP_CAP_GPU with
// the GPU backend.
const char* arch_description();
uint32_t backend_capabilities();

}  // namespace moepage::ds4
