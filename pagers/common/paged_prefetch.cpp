// The paged pager's prefetch reads (the design in paged_pager.hpp): hint() places predicted
// experts and submits one ticket per expert; the fills are committed in the bookkeeping before
// their bytes land, and only the reads a request uses, a slot about to be overwritten, or a read
// left from an earlier token are waited for; the rest are polled, and a failed one drops its expert.
#include "moepage/cpp/ticket.hpp"
#include "moepage/pager_core/errors.hpp"
#include "paged_pager.hpp"

namespace moepage::paging {

using moepage::pager::PagerError;
using moepage::pager::Plan;

mp_status PagedPager::hint(uint32_t layer, const int32_t* experts, uint32_t n) {
  note_layer_call(layer);
  if (n == 0) return MP_OK;
  if (experts == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pager '" + component_ + "': hint without experts");
  if (layer >= cat_.n_layers || !cat_.has_experts[layer])
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("pager '{}': hint for layer {}, which has no routed experts", component_, layer));
  if (pending_[layer].size() >= moepage::pager::kMaxPendingPrefetchesPerLayer) commit_prefetches(layer);
  const Plan* plan = nullptr;
  try {
    plan = &core_->prefetch(layer, {experts, n});
  } catch (const PagerError& e) {
    throw mp::Error(e.status(), "pager '" + component_ + "': " + e.what());
  }
  if (plan->size() == 0) return MP_OK;
  // One ticket per expert, so that a request waits only for the prefetched experts it uses.
  for (uint32_t i = 0; i < plan->size(); ++i) {
    const uint32_t slot = plan->part(i).slot;
    land_slot(layer, slot);  // an earlier prefetch still writing the slot this one evicts
    uint32_t count = 0;
    const uint64_t bytes = add_reads(layer, uint32_t(plan->experts[i]), slot, MP_READ_PREFETCH, count);
    mp_ticket ticket = 0;
    if (const mp_status s = transport_.vtable->submit(transport_.self, requests_.data(), count, &ticket); s != MP_OK) {
      // The experts submitted before this one keep their tickets (their slots are emptied with the
      // fill; a later read into one of them lands them first).
      core_->invalidate_fill(layer, plan->fill);
      throw mp::Error(
          s, mp::format("pager '{}': layer {}: prefetch submit failed: {}", component_, layer, transport_error()));
    }
    slot_reads_[layer][slot] = SlotRead{ticket, bytes, plan->experts[i], token_};
  }
  pending_[layer].push_back(plan->fill);
  return MP_OK;
}

void PagedPager::commit_prefetches(uint32_t layer) {
  for (const uint64_t fill : pending_[layer]) core_->commit_fill(layer, fill);
  pending_[layer].clear();
}

bool PagedPager::land_slot(uint32_t layer, uint32_t slot, ReadFailure* failure) {
  SlotRead& r = slot_reads_[layer][slot];
  if (r.ticket == 0) return true;
  const uint64_t t0 = now();
  mp_ticket_result result = mp::no_failed_request();
  const mp_status s = mp::report_ticket(transport_.vtable, transport_.self, r.ticket, false, result);
  wait_ns_ += now() - t0;
  r.ticket = 0;
  if (s == MP_OK) {
    bytes_read_ += r.bytes;
    return true;
  }
  if (failure != nullptr) *failure = ReadFailure{s, transport_error(), result};
  return false;
}

bool PagedPager::read_again(uint32_t layer, uint32_t expert, uint32_t slot, ReadFailure& failure) {
  log_.warn("layer {}: the prefetch read of expert {} failed ({}); reading it again", layer, expert, failure.why);
  uint32_t count = 0;
  const uint64_t bytes = add_reads(layer, expert, slot, MP_READ_DEMAND, count);
  const uint64_t t0 = now();
  mp_ticket ticket = 0;
  mp_ticket_result result = mp::no_failed_request();
  mp_status s = transport_.vtable->submit(transport_.self, requests_.data(), count, &ticket);
  if (s == MP_OK) s = mp::report_ticket(transport_.vtable, transport_.self, ticket, false, result);
  const uint64_t took = now() - t0;
  read_ns_ += took;
  wait_ns_ += took;
  if (s == MP_OK) {
    bytes_read_ += bytes;
    return true;
  }
  failure = ReadFailure{s, transport_error(), result};
  core_->drop(layer, int32_t(expert));
  return false;
}

void PagedPager::reap_prefetches(uint32_t layer) {
  for (uint32_t slot = 0; slot < slot_reads_[layer].size(); ++slot) {
    SlotRead& r = slot_reads_[layer][slot];
    if (r.ticket == 0) continue;
    mp_ticket_result result = mp::no_failed_request();
    const bool this_token = r.token == token_;
    const uint64_t t0 = now();
    const mp_status s = mp::report_ticket(transport_.vtable, transport_.self, r.ticket, this_token, result);
    if (!this_token) wait_ns_ += now() - t0;
    if (s == MP_PENDING) continue;
    r.ticket = 0;
    if (s == MP_OK) {
      bytes_read_ += r.bytes;
      continue;
    }
    // A failed prefetch is advice lost, not an error: its expert leaves the bookkeeping, and a
    // request for it reads it again.
    if (core_->pool(layer).slot_of(uint32_t(r.expert)) == int32_t(slot)) core_->drop(layer, r.expert);
    log_.warn("layer {}: the prefetch read of expert {} failed; its slot was emptied: {}", layer, r.expert,
              transport_error());
  }
}

void PagedPager::settle_all_prefetches() noexcept {
  for (uint32_t l = 0; l < cat_.n_layers; ++l) {
    for (SlotRead& r : slot_reads_[l])
      if (r.ticket != 0) {
        transport_.vtable->wait(transport_.self, r.ticket);
        r.ticket = 0;
      }
    pending_[l].clear();
  }
}

}  // namespace moepage::paging
