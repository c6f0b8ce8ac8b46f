// Decode with the pager's slots looked up on the device (ModelOptions::slot_table, pager ABI 1.11
// residency). Without it a paged decode step brings every scored layer's expert ids to the host
// (10-40 us on an H100/H200, bench/results/2026-12-07-control-latency.md) and the host queues the
// layer's experts only after its acquire, so the GPU idles at every layer even when every expert
// hit. With it the host queues the step ahead of the device (at most slot_queue_ahead_layers
// layers past a stall it has not served: a host a thousand launches ahead of a stream is stopped
// by the runtime, which while the device waits for it would never end):
//
//   router -> looks each chosen expert up in the layer's device table (its slot, or null) and
//             orders the token's record hits first; the ids, the count of misses and a stamp go
//             to this link's row of mapped host memory
//   experts over the hits (the launch covers every group; a block of a miss's group leaves at once)
//   stall  -> returns at once when nothing missed; else waits until its word in device memory
//             carries its stamp (the host copies the layer's new table row up first, then the
//             stamp, on a stream of its own: the stall spins on device memory, and reads host
//             memory only now and then, for the host's abort word)
//   experts over the misses (now in their slots)
//
// and serves the stalls in layer order while the GPU runs, each as soon as the device has looked
// its layer up (between the layers it queues, or waiting for it once the queue is full or the step
// is queued): a layer that hit is reported to the pager by a plain acquire (bookkeeping only: the
// device already computed it); one that missed is acquired (its reads started), and its reply (the
// new table row, then the stamp) queued behind a device-side wait for those reads, so the stall
// lets go the moment the bytes land, without the host waking up in between; the host then waits
// for the reads (a failed one fails the step). A token whose experts all hit makes no round trip.
//
// The table holds only what the pager reports valid (residency): a slot the device reads keeps its
// bytes until a pager call naming that layer returns, and the host makes the calls that may evict
// only before the layer's lookup is queued (hints, whose changes are uploaded before it) or while
// the device waits in that layer's stall (the acquire's finish, which may follow the reply, only
// settles reads the reply already waited for). A host that fails while serving aborts every stall
// (they give up and compute nothing more of their layers), and the call throws; so does a reply
// that outlasts reply_timeout, whose watch thread aborts the stalls through mapped host memory (no
// queue needed).
//
// Plain C++ (no HIP header), so the MoE scratch can own one.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "deepseek4/cpu/deadline_watch.hpp"

#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

class SlotStalls {
 public:
  // Rows of mapped host memory (the routers write them, the host reads), the stalls' words in
  // device memory (copies write them, the stalls read) and their pinned staging, and a stream for
  // the host's copies, all made now (at load) and zeroed. reply_timeout > 0: a watch (its thread
  // made now) lets every stall go when one reply takes longer (watch_reply); 0: none, and only the
  // stall's own time-out (tens of seconds) bounds a reply that never comes.
  SlotStalls(uint32_t layers, uint32_t k, uint32_t n_experts,
             std::chrono::milliseconds reply_timeout = std::chrono::milliseconds(0));
  ~SlotStalls();
  SlotStalls(const SlotStalls&) = delete;
  SlotStalls& operator=(const SlotStalls&) = delete;

  // The stamp of the next lookup (never 0, the rows' and words' initial value).
  uint32_t next_stamp();
  // Row `layer` as the device addresses it (TokenRecord::host_ids under a lookup): k ids, the
  // count of misses, the stamp.
  int32_t* row_device(uint32_t layer) const;
  // Waits until row `layer` carries `stamp`, copies its k ids to ids_out and returns the misses.
  // Throws GpuError naming the layer when `stream` finished (the router ran) without the stamp, or
  // failed.
  int32_t await_row(uint32_t layer, uint32_t stamp, Stream stream, int32_t* ids_out) const;
  // Whether row `layer` carries `stamp` already (the device has looked the layer up), without
  // waiting.
  bool row_arrived(uint32_t layer, uint32_t stamp) const;
  // The stream the replies go on (the compute stream is held by the stall): whatever the caller
  // queues on it before release (a device wait for the misses' bytes) runs before the reply.
  Stream reply_stream() const { return reply_stream_; }
  // The reply to `layer`'s stall, queued on the reply stream without waiting: copies `row`
  // (pinned, the layer's n_experts table entries) to the device's table_row, then the stamp into
  // the stall's word. The host must not rewrite `row` or reply to the layer again before these
  // copies ran (the caller records an event behind them).
  void release(uint32_t layer, uint32_t stamp, const std::byte** table_row, const std::byte* const* row);
  // Every stall queued gives up at once and its layer's misses are not computed; for a host that
  // is failing the call. The abort goes first through mapped host memory the stalls poll (no
  // stream: it works while every queue is held), then through their device word. clear_abort,
  // once the stream is idle, readies the link for the next step.
  void abort_all() noexcept;
  bool aborted() const { return aborted_; }
  void clear_abort();
  // The deadline of one reply (the host's wait for its reads and its copies, which it cannot
  // bound itself): watch_reply arms it, end_reply_watch disarms it and says whether it passed
  // first, in which case the watch has already let every stall go (as abort_all's mapped word
  // does). Without a reply_timeout: no-ops, false.
  void watch_reply();
  bool end_reply_watch() { return watch_ && watch_->disarm(); }
  std::chrono::milliseconds reply_timeout() const { return reply_timeout_; }

  // Stalls that gave up waiting for a reply (a host that never answered), since construction; and
  // those since the last call of new_timeouts (read once the stream has passed them).
  uint32_t timeouts() const;
  uint32_t new_timeouts();
  // The last stall that gave up: its layer, the stamp it waited for, the value its word held.
  struct Timeout {
    uint32_t layer, stamp, word;
  };
  Timeout last_timeout() const;
  // The stamp of the host's last reply to `layer` (0: none yet).
  uint32_t replied(uint32_t layer) const { return layer < replied_.size() ? replied_[layer] : 0; }

  // Queues the stall of `layer` on `stream`: gate is the router's {0, hits, hits, nb} (device).
  void launch_stall(uint32_t layer, uint32_t stamp, int32_t* gate, Stream stream) const;

 private:
  // Frees whatever the constructor made (also when it failed part way).
  void release_memory() noexcept;
  // Where row `layer` starts in the mapped memory (k ids, the misses, the stamp), the row as the
  // host reads it, and where the time-out record starts, past every layer's row.
  size_t row_at(uint32_t layer) const { return size_t(layer) * (k_ + 2); }
  const volatile int32_t* row_host(uint32_t layer) const { return rows_host_ + row_at(layer); }
  size_t record_at() const { return row_at(layers_); }
  // The host's abort word (mapped) and its setter, which any thread may call (no driver call).
  int32_t* host_abort_word() const;
  void abort_through_host_memory() noexcept;
  // Writes `value` into device word `index` (a layer's stamp, or the abort word at `layers_`) with
  // a copy on the link's stream; write_word waits for it (and for everything queued there before).
  void queue_word(uint32_t index, int32_t value);
  void write_word(uint32_t index, int32_t value);

  uint32_t layers_, k_, experts_;
  // After the rows: the time-out count, then the last time-out's layer, stamp and word; then the
  // host's abort word.
  static constexpr size_t kTimeoutInts = 4;
  int32_t* rows_host_ = nullptr;    // mapped: rows [layers][k + 2], the time-out record, the abort word
  int32_t* rows_device_ = nullptr;  // the same memory as the device addresses it
  int32_t* words_ = nullptr;        // device: [layers] the stamp each stall waits for, then abort
  int32_t* staging_ = nullptr;      // pinned: the copies' sources, [layers + 1]
  void* reply_stream_ = nullptr;    // hipStream_t
  std::vector<uint32_t> replied_;   // [layers]: the stamp each layer's last reply carried
  uint32_t stamp_ = 0;
  uint32_t timeouts_seen_ = 0;
  bool aborted_ = false;
  std::chrono::milliseconds reply_timeout_;
  std::unique_ptr<cpu::DeadlineWatch> watch_;  // last: its thread may touch the mapped abort word
};

}  // namespace moepage::ds4::gpu
