// The host's side of slot lookups on the device (moe_slot_table.hpp, slot_table.hpp).
#include "deepseek4/hip/moe_slot_table.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/moe_finish.hpp"
#include "deepseek4/hip/moe_route.hpp"
#include "deepseek4/hip/moe_scratch.hpp"

namespace moepage::ds4::gpu {
namespace {

std::string layer_name(uint32_t layer) { return "gpu moe layer " + std::to_string(layer); }

// The token's distinct experts, ascending, into used; throws naming the layer for ids the
// lookup's record could not have been built from.
uint32_t distinct_experts(const int32_t* ids, uint32_t k, int64_t E, uint32_t layer, int32_t* used) {
  for (uint32_t j = 0; j < k; ++j) {
    if (ids[j] < 0 || ids[j] >= E)
      throw GpuError(layer_name(layer) + ": the router chose expert " + std::to_string(ids[j]) + ", expected 0.." +
                     std::to_string(E - 1));
    used[j] = ids[j];
  }
  std::sort(used, used + k);
  return uint32_t(std::unique(used, used + k) - used);
}

// The reply watch (SlotStalls::watch_reply) let every stall go: their layers' misses were not
// computed.
[[noreturn]] void throw_reply_overdue(const MoeScratch& sc, uint32_t layer, double took_ms) {
  throw GpuError(layer_name(layer) + ": the host's reply to its slot lookup stall took " +
                 std::to_string(int64_t(took_ms)) + " ms, past arch.slot_reply_timeout_ms (" +
                 std::to_string(sc.slot_stalls->reply_timeout().count()) +
                 "); every stall was let go and their missed experts were not computed, so the step fails");
}

}  // namespace

bool prepare_slot_lookup(MoeScratch& sc, GpuExpertSource& source, uint32_t layer, int64_t E, Stream stream) {
  hipStream_t st = native(stream);
  int8_t& state = sc.slot_row[layer];
  if (state < 0) return false;
  uint64_t generation = 0;
  if (!source.residency(layer, nullptr, 0, generation)) {
    state = -1;
    return false;
  }
  if (state > 0 && generation == sc.slot_generation[layer]) return true;
  const std::byte** now = sc.residency.data();
  source.residency(layer, now, uint32_t(E), generation);
  const std::byte** mirror = sc.mirror + int64_t(layer) * E;
  bool differs = state == 0;
  for (int64_t e = 0; e < E; ++e) {
    if (now[e] && reinterpret_cast<uintptr_t>(now[e]) % 16 != 0) {
      state = -1;  // the expert kernels read slots 16 bytes at a time
      return false;
    }
    differs = differs || now[e] != mirror[e];
  }
  if (differs) {
    // The previous copy out of this layer's pinned row must be done before it is rewritten.
    MP_GPU_CHECK(hipEventSynchronize(static_cast<hipEvent_t>(sc.layer_copied[layer])));
    std::copy_n(now, E, mirror);
    MP_GPU_CHECK(hipMemcpyAsync(sc.table + int64_t(layer) * E, mirror, size_t(E) * sizeof(const std::byte*),
                                hipMemcpyHostToDevice, st));
    MP_GPU_CHECK(hipEventRecord(static_cast<hipEvent_t>(sc.layer_copied[layer]), st));
  }
  state = 1;
  sc.slot_generation[layer] = generation;
  return true;
}

namespace {

// The reply to a layer that missed: its experts acquired (the misses' reads started), the reply
// stream made to wait on the device for every read still landing, then the row the device needs
// (the acquired experts in their slots, null for the experts they evicted) and the stamp queued
// behind that wait, so the stall lets go as soon as the bytes are in. The host then waits for the
// reads: a failed one throws, and the step with it (what the misses computed is never returned).
void reply_to_miss(MoeScratch& sc, GpuExpertSource& source, const MoeScratch::QueuedStall& q, const int32_t* used,
                   uint32_t n) {
  const int64_t E = sc.n_experts;
  const std::byte* slots[kMaxDeviceTopK];
  uint8_t pending[kMaxDeviceTopK];
  const Stream reply = sc.slot_stalls->reply_stream();
  hipEvent_t copied = static_cast<hipEvent_t>(sc.layer_copied[q.layer]);
  // The previous copies out of this layer's pinned row (an upload, or the last reply) are done.
  MP_GPU_CHECK(hipEventSynchronize(copied));
  source.acquire_start(q.layer, used, n, slots, pending, reply);
  FinishOnUnwind started{source, q.layer};
  for (uint32_t i = 0; i < n; ++i)
    if (pending[i]) source.acquire_await(q.layer, i, reply);
  // During the acquire the source reports what it evicted (null) and leaves the misses out until
  // they land; the reply reaches the device only after they did.
  uint64_t generation = 0;
  const std::byte** now = sc.residency.data();
  if (!source.residency(q.layer, now, uint32_t(E), generation))
    throw GpuError(layer_name(q.layer) + ": the expert source stopped reporting its residency");
  for (uint32_t i = 0; i < n; ++i) now[used[i]] = slots[i];
  const std::byte** mirror = sc.mirror + int64_t(q.layer) * E;
  for (int64_t e = 0; e < E; ++e) {
    if (now[e] && now[e] != mirror[e] && reinterpret_cast<uintptr_t>(now[e]) % 16 != 0)
      throw GpuError(layer_name(q.layer) + " expert " + std::to_string(e) + ": a slot not 16-byte aligned");
    mirror[e] = now[e];  // the row the device gets before the stall lets go
  }
  sc.slot_stalls->release(q.layer, q.stamp, sc.table + int64_t(q.layer) * E, mirror);
  MP_GPU_CHECK(hipEventRecord(copied, native(reply)));
  started.armed = false;
  source.acquire_finish(q.layer);
  if (!source.residency(q.layer, now, uint32_t(E), generation))
    throw GpuError(layer_name(q.layer) + ": the expert source stopped reporting its residency");
  for (uint32_t i = 0; i < n; ++i)
    if (now[used[i]] != slots[i])
      throw GpuError(layer_name(q.layer) + " expert " + std::to_string(used[i]) +
                     ": acquired, yet the source's residency does not report it in its slot");
  // Not the generation after the finish: what else the finish settled (a prefetch that landed) is
  // not in the device's row, so the next lookup compares the row with the source again.
  sc.slot_generation[q.layer] = 0;
}

// One queued stall: its row read (waiting until the device wrote it), then accounted or replied to.
void serve_one(MoeScratch& sc, GpuExpertSource& source, MoeStats& stats, Stream stream,
               const MoeScratch::QueuedStall& q) {
  int32_t ids[kMaxDeviceTopK], used[kMaxDeviceTopK];
  const std::byte* slots[kMaxDeviceTopK];
  const int32_t misses = sc.slot_stalls->await_row(q.layer, q.stamp, stream, ids);
  const uint32_t n = distinct_experts(ids, sc.top_k, sc.n_experts, q.layer, used);
  if (misses == 0) {
    const std::byte** mirror = sc.mirror + int64_t(q.layer) * sc.n_experts;
    for (uint32_t i = 0; i < n; ++i) slots[i] = mirror[used[i]];
    source.account_hits(q.layer, used, n, slots);
    return;
  }
  ++stats.slot_stalls;
  const auto started = std::chrono::steady_clock::now();
  sc.slot_stalls->watch_reply();
  reply_to_miss(sc, source, q, used, n);
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - started;
  sc.slowest_reply_ms = std::max(sc.slowest_reply_ms, took.count());
  // Disarmed per reply, so the deadline never covers the wait for the device to reach the next
  // layer; an expiry and the disarm cannot both win, so a passed deadline is always seen here.
  if (sc.slot_stalls->end_reply_watch()) throw_reply_overdue(sc, q.layer, took.count());
}

// Serves the queued stalls from the oldest while `more` says so of the next one.
template <typename More>
void serve_while(MoeScratch& sc, GpuExpertSource& source, MoeStats& stats, Stream stream, More more) {
  if (sc.stalls_queued.empty() || !more(sc.stalls_queued.front())) return;
  const AbandonSlotStallsOnThrow abandon(sc);  // whatever throws: the remaining stalls give up
  size_t served = 0;
  for (; served < sc.stalls_queued.size() && more(sc.stalls_queued[served]); ++served)
    serve_one(sc, source, stats, stream, sc.stalls_queued[served]);
  // Served: the guard abandons only what is left (no allocation: the capacity stays).
  sc.stalls_queued.erase(sc.stalls_queued.begin(), sc.stalls_queued.begin() + std::ptrdiff_t(served));
}

}  // namespace

void serve_slot_stalls(MoeScratch& sc, GpuExpertSource& source, MoeStats& stats, Stream stream,
                       uint32_t through_layer) {
  serve_while(sc, source, stats, stream,
              [through_layer](const MoeScratch::QueuedStall& q) { return q.layer <= through_layer; });
}

void serve_arrived_slot_stalls(MoeScratch& sc, GpuExpertSource& source, MoeStats& stats, Stream stream) {
  serve_while(sc, source, stats, stream,
              [&sc](const MoeScratch::QueuedStall& q) { return sc.slot_stalls->row_arrived(q.layer, q.stamp); });
}

void throw_if_stalls_gave_up(MoeScratch& sc) {
  if (!sc.slot_stalls) return;
  if (const uint32_t n = sc.slot_stalls->new_timeouts(); n > 0) {
    const SlotStalls::Timeout t = sc.slot_stalls->last_timeout();
    throw GpuError("gpu moe: " + std::to_string(n) + " slot lookup stall(s) gave up waiting for the host's reply (" +
                   layer_name(t.layer) + " waited for stamp " + std::to_string(t.stamp) + ", its word held " +
                   std::to_string(t.word) + ", the host's last reply to it carried " +
                   std::to_string(sc.slot_stalls->replied(t.layer)) + "; the batch's slowest reply took " +
                   std::to_string(int64_t(sc.slowest_reply_ms)) +
                   " ms); their layers' missed experts were not computed, so the step fails");
  }
}

void abandon_slot_stalls(MoeScratch& sc) noexcept {
  if (sc.stalls_queued.empty()) return;
  sc.slot_stalls->abort_all();
  sc.stalls_queued.clear();
  for (int8_t& state : sc.slot_row)
    if (state > 0) state = 0;  // the device rows may have missed a reply: upload them again
}

}  // namespace moepage::ds4::gpu
