// The `deepseek4` architecture plugin: DeepSeek-V4 through the plugin ABI, on the CPU, or on a
// GPU when the host's device service is a HIP device (plugins built with MOEPAGE_GPU != none;
// a CPU-only build refuses a HIP device with an error naming the build option). The device's
// code is behind ForwardBackend (forward_backend.hpp); this class holds none of it.
//
// Life cycle, and what each step costs:
//   create        parse config.json, open the checkpoint (headers), read the dense weights into
//                 memory as stored (no dequantized copy; no mapping, so a file changed under the
//                 run is an error, never SIGBUS), build the expert catalog. Reads no expert bytes
//                 and allocates no forward state.
//   bind_pager    builds the forward backend (decode state and scratch for `max_context`
//                 positions) on top of the pager; routed experts reach the forward pass only
//                 through it. CPU device: the CPU Model, which waits on the pager's ready events
//                 on the host (cpu_backend.cpp). HIP device: the GpuModel on a compute stream
//                 taken from the device service; dense weights are copied to the device here; the
//                 compute stream waits on the pager's ready events on the device (gpu_backend.cpp).
//   forward       before the tokens run: pager begin_token(position of the first token) and, for
//                 every hash-routed layer, hint(layer, experts tid2eid gives these tokens).
//                 Experts are then acquired layer by layer (pager_expert_source.hpp).
//   forward_greedy  forward of the tokens, then the greedy next token instead of the logits: on a
//                 GPU the pick runs on the device and 8 bytes come back instead of the vocabulary.
//   reset         position 0 again.
//                 After each layer, the pager's observe(layer, hidden) (when it has one) gets the
//                 mean of the residual streams of the batch's last token, so a predictor can
//                 stage the next layer's experts.
// After a failed forward() the sequence state is undefined: call reset() before the next one.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "abi_collective.hpp"
#include "deepseek4/model/inspect.hpp"
#include "deepseek4/model/synth.hpp"
#include "forward_backend.hpp"
#include "loaded_checkpoint.hpp"
#include "moepage/cpp/plugin_adapter.hpp"
#include "pager_calls.hpp"
#include "routing_replay.hpp"

namespace {

using namespace moepage;

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_INT, "threads", "0", "compute threads; 0 = all cores"),
    mp::option(MP_OPT_INT, "max_context", "4096", "positions one sequence may hold (prompt + generated tokens)"),
    mp::option(MP_OPT_INT, "max_batch", "64",
               "tokens one forward step processes together (a prompt runs in chunks this long); scratch grows "
               "with it (on a GPU about 1 MiB per token at Flash width, plus the logits rows)"),
    mp::option(MP_OPT_INT, "matrix_min_tokens", "8",
               "GPU: dense weight products and attention over at least this many tokens (prompt chunks, decode "
               "batches) run on the matrix cores (bf16 operands, float sums; see matrix_split); 0 = never (CUDA "
               "cores)"),
    mp::option(MP_OPT_INT, "matrix_min_expert_tokens", "2",
               "GPU: a layer's routed experts run on the matrix cores once one expert serves at least this many "
               "tokens; 0 = never (CUDA cores)"),
    mp::option(MP_OPT_BOOL, "matrix_split", "true",
               "GPU: x enters the matrix-core products as two bf16 parts (about 2^-17 relative: routers pick as "
               "in float); false: one part (2^-9, half the matrix instructions, near ties may flip)"),
    mp::enum_option("matrix_expert_precision", "fp16|split-bf16|bf16", "fp16",
                    "GPU, with matrix_split: the routed experts' matrix-core operands in prefill. fp16 = FP4 weights "
                    "exactly in fp16 and x rounded once to fp16 (about 2^-12 relative; FP8/BF16 experts take "
                    "split-bf16, as does a layer whose x could pass 65504; an FP4 scale past 2^13 fails the call); "
                    "split-bf16 = x as two bf16 parts (2^-17, twice "
                    "the matrix instructions); bf16 = one part (2^-9: a perturbed hidden state flips a later router's "
                    "near tie, the long-prompt golden fixture ends 0.17 of scale off)"),
    mp::option(MP_OPT_BOOL, "matrix_expert_stream", "true",
               "GPU (NVIDIA), matrix_expert_precision fp16: a prompt's FP4 experts stream their weights and token "
               "rows through shared memory, three steps of 64 columns in flight, rather than loading each step "
               "into registers one step ahead; the same bits either way (a kernel test holds it to them)"),
    mp::option(MP_OPT_BOOL, "matrix_single_token", "false",
               "GPU: experts that serve one token each (every decode step) multiply on the matrix cores too "
               "(FP4/FP8/BF16, columns a multiple of 64; FP4 on fp16 operands 1-3.3% slower decode on the H100, "
               "the rest 7-8% on the H200); false: the CUDA cores in float"),
    mp::option(MP_OPT_INT, "gemv_stages", "3",
               "GPU (NVIDIA): single-token BF16 products on the CUDA cores (decode: the output head) keep this "
               "many steps of weight rows in flight in shared memory while they multiply the oldest (2 to 4; "
               "H200: 7-8.5% less time at 3); 0: each step is loaded into registers, then multiplied. FP8 and "
               "FP4 products always take the register path"),
    mp::option(MP_OPT_INT, "library_min_tokens", "512",
               "GPU (NVIDIA): dense products over at least this many tokens (prefill) dequantize their weight to "
               "bf16 once and multiply on cuBLAS, x split as matrix_split says (Flash: up to 64 MiB for the "
               "weight, 128 MiB for x's parts and 32 MiB for cuBLAS while a prompt runs); 0 = never (the "
               "matrix-core tiles). H200, 4-layer Flash prefill against the tiles: 0.91x at 128 tokens, 0.94x "
               "at 256, 1.02x at 512, 1.04x at 1,024, 1.09x at 4,096"),
    mp::option(MP_OPT_INT, "library_weight_cache_mib", "0",
               "GPU (NVIDIA): MiB of device memory in which the library path (library_min_tokens) keeps each "
               "dense weight's bf16 copy after its first product, so later products (the next chunk of a long "
               "prompt, the next prompt) skip the dequantization; weights past the budget are dequantized per "
               "product as with 0 (the default). Flash: about 256 MiB a layer holds all of its dense weights"),
    mp::option(MP_OPT_BOOL, "attention_output_parts", "false",
               "GPU (NVIDIA): a prompt attended on the matrix cores writes its output as wo_a's two bf16 parts "
               "where wo_a goes to the library (library_min_tokens, matrix_split), so no kernel reads the floats "
               "back to round them; the same bits either way (a kernel test holds it to them). Default false: on the "
               "H100 its scattered stores of the two parts cost the attention kernel more than the split it removes"),
    mp::option(MP_OPT_BOOL, "device_routing", "true",
               "GPU: a decode step over a pager whose slots never move (resident) routes on the device and "
               "reports its experts to the pager afterwards: no host round trip per layer; false: the host "
               "groups every layer's experts, as for a paged pool"),
    mp::option(MP_OPT_BOOL, "observe_after_attention", "false",
               "GPU: hand the pager layer l-1's state (a predictor's observe) once layer l's attention is "
               "launched, the pager waiting on a side stream for that state alone, so the GPU runs the "
               "attention while the host scores; false: before the attention is launched, the GPU idle while "
               "the host scores. A replay's recorded predictions only come later with it. H200, live adapter, "
               "12-layer Flash slice: 1-3.5% slower than false"),
    mp::option(MP_OPT_BOOL, "predictor_on_device", "false",
               "GPU: where the pager's predictor is linear in the state (adapter-prefetch), score the next "
               "layer's experts on the device and hand the pager only the scores, instead of reading the state "
               "back for the host to score. H200, live rank-128 adapter on the 12-layer Flash slice at 25%: "
               "5.3 ms a token faster (21 against 26.3 ms). Off until measured with a trained adapter"),
    mp::option(MP_OPT_BOOL, "timeline", "false",
               "log where each prompt batch's time went: per layer the two mHC sites, the attention and the MoE "
               "on the device (GPU: events on the compute stream; CPU: the clock), the time to queue it all and "
               "the wall time (a diagnostic: on the GPU an inner chunk of a long prompt then waits for its own end)"),
    mp::enum_option("prompt_shared_expert", "auto|beside|urgent|first", "auto",
                    "GPU: where a prompt batch's shared expert runs: beside = on a side stream beside the router "
                    "and the routed experts; urgent = the same on a stream of the device's greatest priority, so its "
                    "blocks start before the routed experts' waiting ones; first = on the compute stream before the "
                    "router; auto = first where the batch's dense products go to the library (library_min_tokens), "
                    "else beside (H100, 4-layer Flash: first +8% at 1,024 tokens, -3% at 128). Decode steps: "
                    "decode_shared_expert"),
    mp::enum_option("decode_shared_expert", "beside|urgent|first", "beside",
                    "GPU: where a decode step's shared expert runs: beside = on a side stream beside the router "
                    "and the routed experts; urgent = the same on a stream of the device's greatest priority; "
                    "first = on the compute stream before the router. The same bits in each; beside's kernels "
                    "start late behind the routed experts' blocks and the combine waits for them (H200 trace, "
                    "4-layer Flash: 4.3-5.7 us a layer); urgent and first are not yet measured"),
    mp::option(MP_OPT_BOOL, "urgent_sinkhorn", "false",
               "GPU: each mHC site's Sinkhorn runs on a side stream of the device's greatest priority, so its "
               "one block starts before the compute stream's waiting blocks (the same bits; H200 trace, 4-layer "
               "Flash: the site after the attention waited up to 4.4 us for it on three of four layers); not yet "
               "measured"),
    mp::option(MP_OPT_BOOL, "overlap_launches", "true",
               "GPU (NVIDIA sm_90+): in a decode step each kernel may start while the previous one of its "
               "stream finishes and waits on the device for its inputs (programmatic dependent launch), hiding "
               "each launch and its first loads; prompt batches launch plainly; false: plain launches"),
    mp::option(MP_OPT_INT, "paged_band", "32",
               "experts one acquire asks a paged pool for, at most (0 = its slots per layer; at least top_k): a "
               "long prompt streams each layer's experts in bands this size (H200, 2,048 tokens, lru at 25% and "
               "50%: 78% of the streaming bound with 32, 60% with the pool's 64 or 128)"),
    mp::option(MP_OPT_PATH, "routing_replay", "",
               "benchmarks only: route as this recorded trace says (plain or .xz; layer i follows trace layer i "
               "mod N, position p its token p mod T) and hand the pager its recorded hints and predictions"),
    mp::enum_option("replay_predictions_at", "observe|acquire|launched", "observe",
                    "routing_replay: when the pager gets layer l+1's recorded predictions: observe = after layer l "
                    "(the recorded predictor reads layer l's output); acquire = right after layer l's own acquire, "
                    "before its experts launch; launched = once layer l's experts are launched, before the host "
                    "waits for its reads (GPU; the CPU path hints at observe). acquire and launched queue the reads "
                    "behind l's: what-ifs, the timing a predictor of layer l's MoE input would have"),
    mp::option(MP_OPT_INT, "replay_predictions", "6",
               "routing_replay: how many of each recorded prediction the pager gets as a hint (0 = none)"),
    mp::option(MP_OPT_BOOL, "hits_first", "true",
               "GPU: compute the experts already in slots while the misses are read, each miss as its bytes land "
               "(the pager's split acquire); false: every expert after all of the layer's reads (an ablation)"),
    mp::option(MP_OPT_BOOL, "defer_acquire_finish", "false",
               "GPU, with hits_first: a paged layer's reads are waited for and its slots committed once the step's "
               "last layer is queued, so the host queues the next layer while they land; false: right after the "
               "layer's experts are launched (always so on a rank of an expert-parallel group). A failed read fails "
               "the call either way. Off: measured 1-6% slower paged decode on an H100 (2026-12-07)"),
    mp::option(MP_OPT_BOOL, "direct_hits", "true",
               "GPU, paged decode: each layer's router also builds the token's expert group record on the device "
               "and a scored layer's router writes the token's expert ids straight into mapped host memory, so a "
               "layer whose experts all hit launches them without an upload and the host has the ids sooner; "
               "false: the ids come by a copy and an event and every record from the host (an ablation)"),
    mp::option(MP_OPT_BOOL, "run_ahead", "false",
               "GPU, greedy decode: each call queues the next step's front (the embedding of its pick, made on "
               "the device, and layer 0's attention with its mHC sites) before the host waits for the pick, and "
               "the next call, given that pick, starts at layer 0's MoE block; any other input recomputes it. "
               "Off where layer 0 compresses; false: each step starts when the host passes its token"),
    mp::option(MP_OPT_BOOL, "slot_table", "false",
               "GPU, paged decode of one token: each scored layer's router looks its experts up in a device table "
               "of the slots the pager reports valid (pager ABI 1.11 residency), computes the hits at once and "
               "waits on the device for the host only where one missed; the host queues the step ahead, so a "
               "token whose experts all hit makes no round trip. Needs such a pager (paged, lru) and no predictor "
               "reading the state; false: every scored layer's ids go to the host before its experts launch"),
    mp::option(MP_OPT_INT, "slot_reply_timeout_ms", "10000",
               "GPU, with slot_table: the longest the host's reply to one stalled layer may take (its reads and "
               "copies); past it a watch lets every stall of the step go and the call fails naming the layer, "
               "so a host that cannot reply fails in about this time. 0: no watch (a stall then gives up on its "
               "own after tens of seconds)"),
    mp::option(MP_OPT_INT, "slot_queue_ahead_layers", "8",
               "GPU, with slot_table: how many layers the host queues past the oldest layer whose stall it has "
               "not served, before it serves that one (0 to 1024). A layer queues a dozen kernels or more, and the "
               "GPU runtime stops a host about a thousand launches ahead of a stream: unbounded, a host stopped "
               "there while the device waits for it would hang (full Flash: 43 layers)"),
    mp::option(MP_OPT_BOOL, "prompt_staging", "true",
               "paged prefill: hint each prompt chunk's first band of a layer before the layer's attention, so the "
               "copies overlap it; false: only the hash layers' first bands, all at the step's start (an ablation)"),
};

// An integer option in [lo, hi]; `range` is how the error names that range.
int64_t int_option(const mp::Options& options, const char* name, int64_t lo, int64_t hi, const std::string& range) {
  const int64_t v = options.get_int(name);
  if (v < lo || v > hi)
    throw mp::Error(MP_ERR_INVALID_ARG, "arch 'deepseek4': option '" + std::string(name) + "' must be " + range +
                                            ", got " + std::to_string(v));
  return v;
}

class Deepseek4Arch {
 public:
  Deepseek4Arch(const mp_arch_create_args& args, const mp::Options& options) : host_(args.host) {
    const int64_t threads = int_option(options, "threads", 0, 1024, "0 (all cores) to 1024");
    const int64_t max_context = int_option(options, "max_context", 1, int64_t(1) << 24, "1 to 16777216");
    max_batch_ = uint32_t(int_option(options, "max_batch", 1, 4096, "1 to 4096"));
    matrix_min_tokens_ = uint32_t(int_option(options, "matrix_min_tokens", 0, 65536, "0 (never) to 65536"));
    matrix_min_expert_tokens_ =
        uint32_t(int_option(options, "matrix_min_expert_tokens", 0, 65536, "0 (never) to 65536"));
    matrix_split_ = options.get_bool("matrix_split");
    const std::string precision = options.get_string("matrix_expert_precision");
    const auto parsed = ds4::parse_expert_precision(precision);
    if (!parsed)
      throw mp::Error(MP_ERR_INVALID_ARG,
                      "arch 'deepseek4': option 'matrix_expert_precision' must be fp16, "
                      "split-bf16 or bf16, got '" +
                          precision + "'");
    matrix_expert_precision_ = *parsed;
    matrix_single_token_ = options.get_bool("matrix_single_token");
    matrix_expert_stream_ = options.get_bool("matrix_expert_stream");
    gemv_stages_ = uint32_t(int_option(options, "gemv_stages", 0, 4, "0 (registers) or 2 to 4"));
    if (gemv_stages_ == 1)  // a ring of one step would wait for each step before multiplying it
      throw mp::Error(MP_ERR_INVALID_ARG,
                      "arch 'deepseek4': option 'gemv_stages' must be 0 (registers) or 2 to 4, got 1");
    library_min_tokens_ = uint32_t(int_option(options, "library_min_tokens", 0, 65536, "0 (never) to 65536"));
    attention_output_parts_ = options.get_bool("attention_output_parts");
    library_weight_cache_mib_ =
        uint32_t(int_option(options, "library_weight_cache_mib", 0, 1 << 24, "0 (off) to 16777216"));
    device_routing_ = options.get_bool("device_routing");
    overlap_launches_ = options.get_bool("overlap_launches");
    observe_after_attention_ = options.get_bool("observe_after_attention");
    predictor_on_device_ = options.get_bool("predictor_on_device");
    timeline_ = options.get_bool("timeline");
    prompt_shared_ = ds4::prompt_shared_from_name(options.get_string("prompt_shared_expert"));
    decode_shared_ = ds4::decode_shared_from_name(options.get_string("decode_shared_expert"));
    urgent_sinkhorn_ = options.get_bool("urgent_sinkhorn");
    paged_band_ = uint32_t(int_option(options, "paged_band", 0, 65536, "0 (the pool's slots) to 65536"));
    if (args.checkpoint_dir == nullptr || *args.checkpoint_dir == '\0')
      throw mp::Error(MP_ERR_INVALID_ARG, "arch 'deepseek4': no checkpoint folder given");
    threads_ = uint32_t(threads);
    hits_first_ = options.get_bool("hits_first");
    defer_acquire_finish_ = options.get_bool("defer_acquire_finish");
    direct_hits_ = options.get_bool("direct_hits");
    run_ahead_ = options.get_bool("run_ahead");
    slot_table_ = options.get_bool("slot_table");
    slot_reply_timeout_ms_ =
        uint32_t(int_option(options, "slot_reply_timeout_ms", 0, 3'600'000, "0 (no watch) to 3600000"));
    slot_queue_ahead_layers_ = uint32_t(int_option(options, "slot_queue_ahead_layers", 0, 1024, "0 to 1024"));
    prompt_staging_ = options.get_bool("prompt_staging");
    try {
      model_ = ds4::LoadedCheckpoint::load(args.checkpoint_dir);
    } catch (const ckpt::CheckpointError& e) {
      throw mp::Error(MP_ERR_IO, e.what());  // a malformed or missing file: the message names it
    } catch (const std::invalid_argument& e) {
      throw mp::Error(MP_ERR_INVALID_ARG, e.what());  // the checkpoint holds what the kernels cannot read
    }
    max_context_ = uint32_t(std::min<uint64_t>(uint64_t(max_context), model_.config.max_position_embeddings));
    load_routing_replay(options);
    mp::HostLog(host_, "deepseek4")
        .info("{}: {} layers, {} experts x {} bytes, dense {} bytes read", model_.dir.string(),
              model_.config.num_hidden_layers, model_.catalog->n_experts(), model_.catalog->expert_file_bytes(),
              model_.dense_bytes);
    if (!model_.ignored_config_keys.empty()) {
      std::string keys;
      for (const std::string& k : model_.ignored_config_keys) keys += (keys.empty() ? "" : ", ") + k;
      mp::HostLog(host_, "deepseek4").info("{}/config.json: keys the engine ignores: {}", model_.dir.string(), keys);
    }
  }

  // 10 for a DeepSeek-V4 config.json, 0 for anything else (including unreadable or malformed
  // files: probing only ranks candidates, it never reports errors).
  // Declining says why (at debug level; the host shows it when no architecture takes the folder).
  static int32_t probe(const mp_host_api* host, const char* checkpoint_dir) {
    const mp::HostLog log(host, "deepseek4");
    if (checkpoint_dir == nullptr) return 0;
    const std::filesystem::path path = std::filesystem::path(checkpoint_dir) / "config.json";
    std::ifstream in(path);
    if (!in) {
      log.debug("declines {}: {} cannot be read", checkpoint_dir, path.string());
      return 0;
    }
    const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!config.is_object()) {
      log.debug("declines {}: {} is not a JSON object", checkpoint_dir, path.string());
      return 0;
    }
    const auto type = config.find("model_type");
    if (type != config.end() && type->is_string() && type->get<std::string>() == "deepseek_v4") return 10;
    log.debug("declines {}: {}: model_type is {}, not \"deepseek_v4\"", checkpoint_dir, path.string(),
              type == config.end() ? std::string("absent") : type->dump());
    return 0;
  }

  static void synthesize(const mp_host_api*, const mp_synth_request* request) {
    if (request == nullptr || request->struct_size < sizeof(mp_synth_request))
      throw mp::Error(MP_ERR_INVALID_ARG, "synthesize: request is NULL or older than this plugin's ABI");
    if (request->out_dir == nullptr || *request->out_dir == '\0')
      throw mp::Error(MP_ERR_INVALID_ARG, "synthesize: no output folder given");
    ds4::SynthOptions o;
    if (request->preset != nullptr && *request->preset != '\0') o.preset = request->preset;
    if (request->layers > 0) o.layers = uint32_t(request->layers);
    if (request->experts > 0) o.experts = uint32_t(request->experts);
    if (request->expert_dtype != nullptr && *request->expert_dtype != '\0') {
      o.expert_format = ds4::weight_format_from_name(request->expert_dtype);
      if (!o.expert_format)
        throw mp::Error(MP_ERR_INVALID_ARG, std::string("synthesize: expert dtype '") + request->expert_dtype +
                                                "' is not one of fp4, fp8, bf16");
    }
    o.seed = request->seed;
    o.out = request->out_dir;
    o.progress = request->show_progress != 0;
    try {
      ds4::synthesize(o);
    } catch (const std::invalid_argument& e) {
      throw mp::Error(MP_ERR_INVALID_ARG, e.what());
    }
  }

  void describe(mp_model_info* out) {
    if (out == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "describe: out is NULL");
    const ds4::Config& c = model_.config;
    mp_model_info info{};
    info.struct_size = sizeof info;
    info.vocab_size = c.vocab_size;
    info.n_layers = c.num_hidden_layers;
    info.d_model = c.hidden_size;
    info.n_experts = c.n_routed_experts;
    info.top_k = c.num_experts_per_tok;
    info.bos_token = c.bos_token_id;
    info.eos_token = c.eos_token_id;
    info.max_positions = max_context_;
    info.dense_bytes = model_.dense_bytes;
    info.expert_bytes = model_.expert_bytes;
    mp::write_out(out, info, "arch 'deepseek4': describe");  // a host built against an older v1 gets its prefix
  }

  void expert_catalog(const mp_expert_catalog** out) {
    if (out == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "expert_catalog: out is NULL");
    *out = &model_.catalog->abi();
  }

  void bind_pager(const mp_pager_ref* pager) {
    if (pager == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "bind_pager: pager is NULL");
    // The pager's transport opened the checkpoint files by path after create() read them: a file
    // replaced or rewritten in between would feed the experts of another version.
    try {
      model_.checkpoint->check_unchanged();
    } catch (const ckpt::CheckpointError& e) {
      throw mp::Error(MP_ERR_IO, e.what());
    }
    const ds4::Config& c = model_.config;
    // Drop a previous binding first: the old backend must not outlive its pager calls.
    backend_.reset();
    tokens_ = 0;
    pager_ = std::make_unique<ds4::PagerCalls>(host_, *pager, c.n_routed_experts, c.num_experts_per_tok, paged_band_);
    if (!hits_first_) pager_->use_plain_acquire();
    if (!prompt_staging_) pager_->stage_at_step_start();
    hint_scratch_.reserve(c.n_routed_experts);
    if (replay_) pager_->replay_predictions(replay_.get(), replay_top_, c.num_hidden_layers, replay_timing_);
    backend_ = ds4::make_forward_backend(ds4::BackendInputs{host_,
                                                            pager_.get(),
                                                            &model_,
                                                            max_context_,
                                                            max_batch_,
                                                            threads_,
                                                            replay_.get(),
                                                            matrix_min_tokens_,
                                                            matrix_split_,
                                                            matrix_expert_precision_,
                                                            matrix_single_token_,
                                                            matrix_min_expert_tokens_,
                                                            device_routing_,
                                                            ranks_ ? ranks_->view() : ds4::ExpertParallel{},
                                                            overlap_launches_,
                                                            gemv_stages_,
                                                            library_min_tokens_,
                                                            library_weight_cache_mib_,
                                                            attention_output_parts_,
                                                            observe_after_attention_,
                                                            predictor_on_device_,
                                                            timeline_,
                                                            prompt_shared_,
                                                            matrix_expert_stream_,
                                                            defer_acquire_finish_,
                                                            direct_hits_,
                                                            run_ahead_,
                                                            slot_table_,
                                                            slot_reply_timeout_ms_,
                                                            slot_queue_ahead_layers_,
                                                            urgent_sinkhorn_,
                                                            decode_shared_});
  }

  // One rank of an expert-parallel group (ABI 1.7): before bind_pager, once. On a GPU the rank
  // sums through the group's device all-reduce (ABI 1.9) when it has one, else through the host.
  void join_ranks(const mp_expert_parallel* group) {
    mp_expert_parallel g{};
    if (mp_read_struct(&g, sizeof g, group, sizeof g) != MP_OK)
      throw mp::Error(MP_ERR_INVALID_ARG, "arch 'deepseek4': join_ranks: the group is NULL or older than ABI 1.7");
    if (backend_ || ranks_)
      throw mp::Error(MP_ERR_INVALID_ARG, "arch 'deepseek4': join_ranks must come once, before bind_pager");
    ranks_ = std::make_unique<ds4::JoinedRanks>(g, model_.config);
  }

  void reset() {
    if (backend_) backend_->reset();
  }

  void forward(const int32_t* tokens, uint32_t n, float* logits, uint32_t flags) {
    if (!backend_)
      throw mp::Error(MP_ERR_INVALID_ARG, "arch 'deepseek4': forward before bind_pager (no expert source yet)");
    if (n == 0) return;
    if (tokens == nullptr || logits == nullptr)
      throw mp::Error(MP_ERR_INVALID_ARG, "forward: tokens or logits is NULL");
    if (flags != MP_FORWARD_LAST_LOGITS && flags != MP_FORWARD_ALL_LOGITS)
      throw mp::Error(MP_ERR_INVALID_ARG, "forward: unknown flags " + std::to_string(flags));
    run_tokens(tokens, n, logits, flags == MP_FORWARD_ALL_LOGITS, nullptr);
  }

  // The GPU picks on the device; the CPU computes the last token's logits and scans them.
  void forward_greedy(const int32_t* tokens, uint32_t n, int32_t* next) {
    if (!backend_)
      throw mp::Error(MP_ERR_INVALID_ARG, "arch 'deepseek4': forward_greedy before bind_pager (no expert source yet)");
    if (tokens == nullptr || next == nullptr || n == 0)
      throw mp::Error(MP_ERR_INVALID_ARG, "forward_greedy: tokens or next_token is NULL, or no tokens");
    run_tokens(tokens, n, nullptr, false, next);
  }

  // Counters since bind_pager; the routed-expert ones come from the backend (timed on the CPU only).
  void stats(mp_arch_stats* out) {
    if (out == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "stats: out is NULL");
    mp_arch_stats s{};
    s.struct_size = sizeof s;
    s.tokens = tokens_;
    if (backend_) backend_->routed_stats(s);
    mp::write_out(out, s, "arch 'deepseek4': stats");
  }

  // The checkpoint report of `moepage inspect` without its tensor table (the host prints tensors
  // itself, generically, and the table of a full-size model would not fit a summary buffer):
  // config, layer schedule, sizes and bytes per expert. Truncated to `cap`, NUL-terminated.
  void summary(char* buf, uint32_t cap) {
    if (buf == nullptr || cap == 0) throw mp::Error(MP_ERR_INVALID_ARG, "summary: buffer is NULL or empty");
    std::string text = ds4::inspect_report(model_.dir, std::nullopt);
    const size_t table = text.find("\ntensors (");
    const size_t sizes = text.find("\nsizes\n");
    if (table != std::string::npos && sizes != std::string::npos && table < sizes) text.erase(table, sizes - table);
    const size_t n = std::min<size_t>(text.size(), cap - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }

 private:
  void load_routing_replay(const mp::Options& options) {
    const int64_t top = options.get_int("replay_predictions");
    if (top < 0 || top > int64_t(model_.config.n_routed_experts))
      throw mp::Error(MP_ERR_INVALID_ARG, "arch 'deepseek4': option 'replay_predictions' must be 0 to " +
                                              std::to_string(model_.config.n_routed_experts) + ", got " +
                                              std::to_string(top));
    replay_top_ = uint32_t(top);
    const std::string at = options.get_string("replay_predictions_at");
    replay_timing_ = at == "acquire"    ? ds4::PredictionTiming::acquire
                     : at == "launched" ? ds4::PredictionTiming::launched
                                        : ds4::PredictionTiming::observe;
    const std::string path = options.get_string("routing_replay");
    if (path.empty()) return;
    try {
      replay_ = ds4::RoutingReplay::load(path, model_.config);
    } catch (const std::runtime_error& e) {
      throw mp::Error(MP_ERR_INVALID_ARG, std::string("arch 'deepseek4': option ") + e.what());
    }
    mp::HostLog(host_, "deepseek4")
        .info("routing replay (a benchmark mode): {} tokens x {} layers from {}; predictions handed to the pager: {}",
              replay_->trace_tokens(), replay_->trace_layers(), path, replay_top_);
  }

  // Under a replay the hints are the trace's (its hash layers' recorded calls), else the hash
  // layers' experts for these tokens.
  void hint_known_experts(const int32_t* tokens, uint32_t n) {
    const ds4::Config& c = model_.config;
    const uint64_t p0 = backend_->position();
    for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
      if (replay_) {
        ds4::DistinctExperts distinct(hint_scratch_, hint_seen_, c.n_routed_experts);
        for (uint32_t i = 0; i < n; ++i)
          for (const int32_t e : replay_->hints(l, p0 + i)) distinct.add(e);
      } else {
        if (c.mlp_layer_types[l] != ds4::MlpKind::HashMoe) continue;
        ds4::hash_routed_experts(model_, l, tokens, n, hint_scratch_, hint_seen_);
      }
      // More experts than a band holds: the chunk streams them in bands of ascending ids, each
      // band evicting the last, and the forward pass stages each chunk's first band as it reaches
      // the layer (forward/prompt_band.hpp). Staging all of them here wasted 279 of 384
      // prefetched experts on a 2,048-token prompt (H200, lru at 25%); staging every hash layer's
      // first band here left the copy engine idle through the later layers' attention.
      if (hint_scratch_.size() > pager_->band()) {
        if (pager_->stages_per_layer()) continue;
        std::sort(hint_scratch_.begin(), hint_scratch_.end());  // prompt_staging: false
        hint_scratch_.resize(pager_->band());
      }
      pager_->hint(l, hint_scratch_);
    }
  }

  // forward() and forward_greedy(): pager notices, then the backend; `next` set: the greedy pick.
  void run_tokens(const int32_t* tokens, uint32_t n, float* logits, bool all, int32_t* next) {
    pager_->begin_token(backend_->position());
    pager_->set_last_position(backend_->position() + n - 1);
    // Hash-routed layers know their experts from the token ids: let the pager stage them now.
    hint_known_experts(tokens, n);
    try {
      if (next) *next = backend_->forward_greedy(tokens, n);
      else backend_->forward(tokens, n, logits, all);
      tokens_ += n;
      if (timeline_)
        for (const ds4::BatchTimeline& t : backend_->take_timelines())
          mp::HostLog(host_, "deepseek4").info("{}", ds4::describe(t));
    } catch (const std::out_of_range& e) {
      throw mp::Error(MP_ERR_INVALID_ARG, e.what());
    } catch (const std::length_error& e) {
      throw mp::Error(MP_ERR_INVALID_ARG, e.what());
    } catch (const ds4::DeviceError& e) {
      throw mp::Error(MP_ERR_DEVICE, e.what());
    } catch (const std::runtime_error& e) {
      // A failed expert read of a file changed under the run says so: the read error alone
      // ("unexpected end of file") does not tell a truncated checkpoint from a bad disk.
      try {
        model_.checkpoint->check_unchanged();
      } catch (const ckpt::CheckpointError& changed) {
        throw mp::Error(MP_ERR_IO, std::string(e.what()) + "; " + changed.what());
      }
      throw;
    }
  }

  const mp_host_api* host_;
  uint32_t threads_ = 0;
  bool hits_first_ = true;                // arch option hits_first
  bool defer_acquire_finish_ = false;     // arch option defer_acquire_finish
  bool direct_hits_ = true;               // arch option direct_hits
  bool run_ahead_ = false;                // arch option run_ahead
  bool slot_table_ = false;               // arch option slot_table
  uint32_t slot_reply_timeout_ms_ = 0;    // arch option slot_reply_timeout_ms
  uint32_t slot_queue_ahead_layers_ = 8;  // arch option slot_queue_ahead_layers
  bool prompt_staging_ = true;            // arch option prompt_staging
  uint32_t max_context_ = 0;
  uint32_t max_batch_ = 64;                // arch option max_batch: tokens the forward pass processes together
  uint32_t matrix_min_tokens_ = 8;         // arch option matrix_min_tokens
  uint32_t matrix_min_expert_tokens_ = 2;  // arch option matrix_min_expert_tokens
  uint32_t paged_band_ = 32;               // arch option paged_band (0: the pool's slots per layer)
  bool matrix_split_ = true;               // arch option matrix_split
  ds4::ExpertPrecision matrix_expert_precision_ = ds4::ExpertPrecision::Fp16;  // arch option of that name
  bool matrix_single_token_ = false;                                           // arch option matrix_single_token
  bool matrix_expert_stream_ = true;                                           // arch option matrix_expert_stream
  uint32_t gemv_stages_ = 3;                                                   // arch option gemv_stages
  bool attention_output_parts_ = false;                                        // arch option attention_output_parts
  uint32_t library_weight_cache_mib_ = 0;                                      // arch option library_weight_cache_mib
  uint32_t library_min_tokens_ = 512;                                          // arch option library_min_tokens
  bool device_routing_ = true;                                                 // arch option device_routing
  bool overlap_launches_ = true;                                               // arch option overlap_launches
  bool observe_after_attention_ = false;                                       // arch option observe_after_attention
  bool predictor_on_device_ = false;                                           // arch option predictor_on_device
  bool timeline_ = false;                                                      // arch option timeline
  ds4::PromptShared prompt_shared_ = ds4::PromptShared::Auto;                  // arch option prompt_shared_expert
  ds4::PromptShared decode_shared_ = ds4::PromptShared::Beside;                // arch option decode_shared_expert
  bool urgent_sinkhorn_ = false;                                               // arch option urgent_sinkhorn
  uint64_t tokens_ = 0;                                                        // through forward() since bind_pager
  ds4::LoadedCheckpoint model_;
  std::unique_ptr<ds4::RoutingReplay> replay_;  // arch option routing_replay; null: the model's own routing
  uint32_t replay_top_ = 0;
  ds4::PredictionTiming replay_timing_ = ds4::PredictionTiming::observe;  // arch option replay_predictions_at
  // Destroyed in reverse order of declaration: the backend before the pager calls it acquires through
  // and before the rank group (join_ranks) its model reduces through.
  std::unique_ptr<ds4::JoinedRanks> ranks_;
  std::unique_ptr<ds4::PagerCalls> pager_;
  std::unique_ptr<ds4::ForwardBackend> backend_;  // null until bind_pager succeeded
  std::vector<int32_t> hint_scratch_;
  std::vector<uint8_t> hint_seen_;  // DistinctExperts' marks for hint_scratch_, all zero between calls
};

}  // namespace

MOEPAGE_PLUGIN("deepseek4", "0.2.0",
               mp::make_arch_descriptor<Deepseek4Arch>("deepseek4", "0.2.0", moepage::ds4::arch_description(),
                                                       moepage::ds4::backend_capabilities() | MP_CAP_SYNTHESIZE,
                                                       kOptions))
