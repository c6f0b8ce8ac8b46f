// The paged pager shared by `paged` (alias `lru`) and `adapter-prefetch`: per-layer slot pools in
// device memory, sized from a memory budget at create, filled through the transport on misses. It
// always pages: a budget that holds every expert buys one slot per expert, filled on first use.
//
// Per acquire: commit the layer's prefetch fills in the bookkeeping, plan (validates before it
// mutates), submit one ticket with every missing part into its evicted slot, wait, then commit the
// fill or, on a failed or short read, invalidate every slot it was filling and fail with an error
// naming layer, expert, file and offset (the next access reads again). Everything the hot path
// touches (request arrays, prefetch reads, trace rows) is sized at create.
//
// Prefetch reads are committed before their bytes land, and only the ones a request needs are
// waited for. Why: the bookkeeping (which expert is where, what the policy sees) must stay exactly
// what `moepage simulate` replays, which settles every prefetch before each plan; but waiting for
// every prefetch of the layer would put the bytes of experts the token does not use on the
// critical path. So each prefetched expert is its own ticket, kept per slot until it lands: a
// request that hits it waits for that ticket alone (the split acquire hands out its event), a miss
// that evicts a slot still being written waits for it first, and the rest are polled. A prefetch
// read that fails after its commit drops the expert from the bookkeeping (the next request reads
// it again); one that a request was already using fails that request, closed, as a demand read
// would.
//
// Why plain acquire always waits, even when the transport offers ticket_event: a read error is
// only known once the read finished, and compute must never run on a slot whose read failed (fail
// closed).
//
// The split acquire (ABI 1.5, pager.h) lets the caller compute while misses are read, and keeps
// fail-closed by moving the verdict: acquire_start plans exactly as acquire does (same eviction
// decisions, so `moepage simulate` still agrees), submits one ticket per missing expert (its
// parts) and returns; acquire_await(i) hands out the transport's ticket_event for expert i (or
// waits for its ticket when there is none); acquire_finish waits for every ticket and only then
// commits the fill, or invalidates it and fails naming the part. Whatever the caller computed
// from a pending slot is garbage until finish said OK, which is the caller's to honour (pager.h).
// The per-layer state of a started acquire is sized at create.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "moepage/cpp/plugin_adapter.hpp"
#include "moepage/pager_core/pager_core.hpp"

namespace moepage::paging {

// The catalog fields the pager keeps (the create args live only for the create call).
struct CatalogCopy {
  uint32_t n_layers = 0, n_experts = 0, n_parts = 0, top_k = 0, d_model = 0;
  uint64_t expert_bytes = 0;
  std::vector<uint64_t> part_offset, part_bytes;
  // Part indices by offset in the slot (mp::parts_in_slot_order): an expert's reads go out in
  // this order, so reads that continue each other are neighbours a transport can merge.
  std::vector<uint32_t> slot_order;
  std::vector<std::string> part_names, files;
  std::vector<mp_expert_segment> segments;
  std::vector<uint8_t> has_experts, hash_routed;

  explicit CatalogCopy(const mp_expert_catalog& c);
  const mp_expert_segment& segment(uint32_t layer, uint32_t expert, uint32_t part) const {
    return segments[(size_t(layer) * n_experts + expert) * n_parts + part];
  }
};

class PagedPager {
 public:
  // `component` names the plugin in messages ("paged", "lru", "adapter-prefetch").
  PagedPager(const mp_pager_create_args& args, const mp::Options& options, std::string component);
  ~PagedPager();
  PagedPager(const PagedPager&) = delete;
  PagedPager& operator=(const PagedPager&) = delete;

  mp_status begin_token(uint64_t token);
  mp_status acquire(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out);
  // The split acquire (pager.h, ABI 1.5).
  mp_status acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out);
  mp_status acquire_await(uint32_t layer, uint32_t index, mp_event* ready);
  mp_status acquire_finish(uint32_t layer);
  // Stages experts of `layer` (most likely first) with prefetch reads, never evicting an expert
  // the current token requested. Used for hash-routed layers and by the predictor.
  mp_status hint(uint32_t layer, const int32_t* experts, uint32_t n);
  // Which of the layer's experts are valid in their slots now (pager.h, ABI 1.11; paged_residency.cpp).
  mp_status residency(uint32_t layer, void** slots, uint32_t n, uint64_t* generation);
  mp_status stats(mp_pager_stats* out);
  mp_status layer_stats(uint32_t layer, mp_pager_layer_stats* out);
  mp_status set_trace(mp_trace_fn fn, void* ctx);
  // Sends a predictor's ranked proposal for `layer` to the trace (ABI 1.3 prediction events), so
  // `moepage simulate` can replay the prefetches it led to. Nothing when tracing is off.
  void trace_predictions(uint32_t layer, const int32_t* experts, uint32_t n) const;

  const CatalogCopy& catalog() const { return cat_; }
  const mp_host_api* host() const { return host_; }
  const mp::HostLog& log() const { return log_; }
  // Predictor statistics, kept here so stats() reports them.
  void count_predictions(uint64_t predicted, uint64_t hit) {
    predictions_ += predicted;
    predictions_hit_ += hit;
  }
  // Experts the current token requested from `layer` in its last acquire (for recall@M).
  std::span<const int32_t> last_request(uint32_t layer) const;

 private:
  // A prefetch read into one slot whose bytes may still be on their way (ticket 0: none).
  struct SlotRead {
    mp_ticket ticket = 0;
    uint64_t bytes = 0;
    int32_t expert = -1;
    uint64_t token = 0;  // the token whose hint issued it
  };

  // A layer's acquire between acquire_start and acquire_finish. The vectors are sized at create
  // (the most experts one request may name); only `n` of them are meaningful.
  struct StartedAcquire {
    bool active = false;
    uint64_t fill = 0;
    uint64_t bytes = 0;
    uint32_t n = 0;
    std::vector<int32_t> experts;    // the request
    std::vector<uint8_t> missed;     // 1: expert i is being read
    std::vector<mp_ticket> tickets;  // expert i's reads; 0: a hit, or already waited for by await
    std::vector<uint8_t> prefetch;   // 1: expert i hit a slot whose prefetch read may still be landing
    std::vector<uint32_t> slots;     // expert i's slot
    // The first failure among tickets acquire_await waited for (no ticket_event), kept for finish.
    mp_status failed = MP_OK;
    std::string why;
    mp_ticket_result failed_result{};
  };

  // Every call naming a layer (acquire, the split acquire, hint) may change its residency: it
  // moves that layer's epoch, which residency's generation includes.
  void note_layer_call(uint32_t layer);
  void decide_and_allocate(const mp_pager_create_args& args, const mp::Options& options);
  // The checks acquire and acquire_start share (request shape, layer, size).
  void check_request(uint32_t layer, const int32_t* experts, uint32_t n, const mp_acquire_result& out) const;
  // Trace rows of a plan, last_request_ and the table-changed flag (acquire and acquire_start).
  void record_request(uint32_t layer, const moepage::pager::Plan& plan, std::span<const int32_t> request);
  // Waits for every ticket of a started acquire still in flight, ignoring their outcome.
  void drain_started(StartedAcquire& started) noexcept;
  StartedAcquire& started_of(uint32_t layer, const char* call);
  // acquire_await of a hit whose prefetch read may still be landing.
  mp_status await_prefetch(uint32_t layer, StartedAcquire& started, uint32_t index, mp_event* ready);
  // split = trace: shares total_slots out per layer by the reuse the trace at `path` shows
  // (pager_core/split.hpp) into layer_slots_; errors name the file and what was expected.
  void split_by_trace(const std::string& path, moepage::pager::PolicyKind policy,
                      moepage::pager::SplitObjective objective, uint64_t total_slots);
  uint8_t* slot_base(uint32_t layer, uint32_t slot) const { return pools_[layer] + uint64_t(slot) * cat_.expert_bytes; }
  // Appends read requests for every part of (layer, expert) into slot; returns the bytes.
  uint64_t add_reads(uint32_t layer, uint32_t expert, uint32_t slot, int32_t priority, uint32_t& count);
  // A failed demand read: the transport's status and message, and which request it named.
  struct ReadFailure {
    mp_status status;
    std::string why;
    mp_ticket_result result;
  };
  // Commits the layer's prefetch fills in the bookkeeping (their reads may still be landing).
  void commit_prefetches(uint32_t layer);
  // Settles the layer's prefetch reads of earlier tokens (waits: they are done by now, and the
  // transport's tickets in flight stay bounded by one token's hints, so the warm path allocates
  // nothing) and polls this token's: one that landed is counted, one that failed drops its expert.
  void reap_prefetches(uint32_t layer);
  // Waits for the prefetch read into `slot` (if any); false when it failed. The expert it was
  // filling is not touched: the caller either overwrites the slot or drops the expert.
  bool land_slot(uint32_t layer, uint32_t slot, ReadFailure* failure = nullptr);
  // Reads (layer, expert) again into `slot` and waits, after its prefetch read failed. False
  // (and the expert dropped) when this read fails too; *failure then says why.
  bool read_again(uint32_t layer, uint32_t expert, uint32_t slot, ReadFailure& failure);
  void settle_all_prefetches() noexcept;
  // experts[i] with missed[i] != 0 were being read when `failure` happened.
  [[noreturn]] void fail_read(uint32_t layer, std::span<const int32_t> experts, std::span<const uint8_t> missed,
                              const ReadFailure& failure);
  [[noreturn]] void fail_part(uint32_t layer, uint32_t expert, uint32_t part, const ReadFailure& failure) const;
  static std::optional<uint64_t> offset_in(const std::string& why);
  const moepage::pager::Plan& plan_with_retry(uint32_t layer, std::span<const int32_t> experts);
  std::string transport_error() const;
  uint64_t now() const;

  std::string component_;
  std::string acquire_label_;  // made once: acquire allocates nothing once warm
  const mp_host_api* host_;
  mp::HostLog log_;
  CatalogCopy cat_;
  mp_transport_ref transport_;
  std::vector<uint32_t> file_handles_;
  int32_t dst_kind_ = MP_MEM_HOST;
  uint32_t slots_ = 0;                 // the uniform slots per layer the budget buys
  std::vector<uint32_t> layer_slots_;  // [n_layers] each pool's slots: slots_, or the split; 0: not paged
  uint64_t pool_bytes_ = 0;
  std::vector<uint8_t*> pools_;  // [n_layers] device memory, nullptr for layers without experts
  std::unique_ptr<moepage::pager::PagerCore> core_;

  // Preallocated hot-path scratch.
  std::vector<mp_read_request> requests_;  // [max(slots, n_experts) * n_parts]
  // [n_layers] prefetch fills not committed yet, capacity kMaxPendingPerLayer
  std::vector<std::vector<uint64_t>> pending_;
  std::vector<std::vector<SlotRead>> slot_reads_;   // [n_layers][slot] prefetch reads that may still be landing
  std::vector<std::vector<int32_t>> last_request_;  // [n_layers], capacity slots
  std::vector<uint32_t> last_request_n_;
  std::vector<StartedAcquire> started_;    // [n_layers] split acquires (sized only for paged layers)
  uint32_t started_count_ = 0;             // layers with an acquire started and not finished
  std::vector<uint64_t> residency_epoch_;  // [n_layers] calls that named the layer (note_layer_call)

  uint64_t token_ = 0;
  uint64_t bytes_read_ = 0, read_ns_ = 0, wait_ns_ = 0;
  uint64_t copy_ns_at_create_ = 0;
  uint64_t predictions_ = 0, predictions_hit_ = 0;
  mp_trace_fn trace_fn_ = nullptr;
  void* trace_ctx_ = nullptr;
};

// The paged pager as a plugin component under one name: `paged`, and `lru`, the name it had before
// it was named for what it is (kept so existing profiles run). Messages carry that name.
template <const char* kName>
class NamedPagedPager : public PagedPager {
 public:
  NamedPagedPager(const mp_pager_create_args& args, const mp::Options& options) : PagedPager(args, options, kName) {}
};

// The option table every paged pager plugin shares (paged, lru, adapter-prefetch), with the
// plugin's default eviction policy: lfru for paged and adapter-prefetch (the fewest reads on both
// recorded traces in `moepage simulate`, and 4-8% faster than lru on the H200 under the Flash trace:
// bench/results/2026-12-05-prefetch-policy-and-device-predictor.md), lru for the alias named after it.
#define MOEPAGE_PAGED_PAGER_OPTIONS(default_policy)                                                                  \
  mp::option(MP_OPT_SIZE_OR_AUTO, "budget", "auto",                                                                  \
             "device memory for expert slots (one slot per expert at most); auto = available memory minus reserve"), \
      mp::option(MP_OPT_SIZE, "reserve", "8GiB", "memory left free when budget is auto"),                            \
      mp::enum_option(                                                                                               \
          "policy", "lru|lfu|lfru|s3fifo", default_policy,                                                           \
          "which cached expert a miss evicts (lfru: decayed frequency; s3fifo: probation, main and ghost queues)"),  \
      mp::enum_option(                                                                                               \
          "split", "uniform|trace", "uniform",                                                                       \
          "slots per layer: uniform, or trace: the same total split by each layer's reuse in split_trace"),          \
      mp::option(MP_OPT_PATH, "split_trace", "",                                                                     \
                 "split = trace: a trace recorded on this model (moepage run --trace; plain text or .xz)"),          \
      mp::enum_option("split_objective", "reads|misses", "reads",                                                    \
                      "split = trace minimises the experts read (misses and prefetches: the link's bytes) or the "   \
                      "misses alone")

}  // namespace moepage::paging
