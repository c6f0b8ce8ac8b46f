// The paged pager's split acquire (ABI 1.5, pager.h; the design in paged_pager.hpp): start plans
// as acquire does and submits one ticket per missing expert, await hands out that ticket's event
// (or waits for it when the transport has none), finish waits for all and commits or fails closed.
// A hit on a prefetched expert whose read is still landing is pending too, on its prefetch ticket.
#include "paged_pager.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "moepage/cpp/ticket.hpp"

namespace moepage::paging {

using moepage::pager::Plan;

PagedPager::StartedAcquire& PagedPager::started_of(uint32_t layer, const char* call) {
  if (layer >= cat_.n_layers || !started_[layer].active)
    throw mp::Error(
        MP_ERR_INVALID_ARG,
        mp::format("pager '{}': {}: layer {} has no started acquire (acquire_start first)", component_, call, layer));
  return started_[layer];
}

void PagedPager::drain_started(StartedAcquire& a) noexcept {
  for (uint32_t i = 0; i < a.n; ++i)
    if (a.tickets[i] != 0) {
      transport_.vtable->wait(transport_.self, a.tickets[i]);
      a.tickets[i] = 0;
    }
}

mp_status PagedPager::acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* caller) {
  note_layer_call(layer);
  mp_acquire_result result = mp::read_in(caller, acquire_label_);
  if (n > 0 && result.pending == nullptr)  // NULL, or outside the caller's struct_size (read_in zeroes it)
    throw mp::Error(MP_ERR_INVALID_ARG, "pager '" + component_ +
                                            "': acquire_start needs the result's pending array (ABI 1.5: inside "
                                            "struct_size and not NULL)");
  check_request(layer, experts, n, result);
  const std::span<const int32_t> request(experts, n);
  result.ready = nullptr;

  commit_prefetches(layer);
  reap_prefetches(layer);
  const Plan& plan = plan_with_retry(layer, request);
  StartedAcquire& a = started_[layer];
  a.fill = plan.fill;
  a.bytes = 0;
  a.n = n;
  a.failed = MP_OK;
  a.failed_result = mp::no_failed_request();
  std::copy(request.begin(), request.end(), a.experts.begin());
  std::fill_n(a.tickets.begin(), n, mp_ticket{0});  // a refused submit drains only this call's tickets
  const uint64_t t0 = now();
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t slot = plan.part(i).slot;
    a.missed[i] = plan.hit(i) ? 0 : 1;
    a.slots[i] = slot;
    a.prefetch[i] = !a.missed[i] && slot_reads_[layer][slot].ticket != 0 ? 1 : 0;
    result.slots[i] = slot_base(layer, slot);
    result.pending[i] = a.missed[i] | a.prefetch[i];
    if (!a.missed[i]) continue;
    land_slot(layer, slot);  // a prefetch still writing the evicted slot lands first
    uint32_t count = 0;
    const uint64_t bytes = add_reads(layer, uint32_t(experts[i]), plan.part(i).slot, MP_READ_DEMAND, count);
    const mp_status s = transport_.vtable->submit(transport_.self, requests_.data(), count, &a.tickets[i]);
    if (s != MP_OK) {
      const std::string why = transport_error();
      a.tickets[i] = 0;  // refused: nothing was queued
      drain_started(a);
      core_->invalidate_fill(layer, plan.fill);
      const mp_expert_segment& s0 = cat_.segment(layer, uint32_t(experts[i]), 0);
      throw mp::Error(s, mp::format("pager '{}': layer {}: submitting the reads of expert {} ({} at offset {}) failed "
                                    "(the slots were left empty): {}",
                                    component_, layer, experts[i], cat_.files[s0.file], s0.offset, why));
    }
    a.bytes += bytes;
  }
  read_ns_ += now() - t0;
  result.table_changed = plan.table_changed ? 1 : 0;
  record_request(layer, plan, request);
  if (a.bytes == 0) a.fill = 0;  // nothing to read: finish only closes the acquire
  a.active = true;
  ++started_count_;
  mp::write_out(caller, result, acquire_label_);
  return MP_OK;
}

mp_status PagedPager::acquire_await(uint32_t layer, uint32_t index, mp_event* ready) {
  note_layer_call(layer);
  if (ready == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pager '" + component_ + "': acquire_await: ready is NULL");
  *ready = nullptr;
  StartedAcquire& a = started_of(layer, "acquire_await");
  if (index >= a.n)
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("pager '{}': acquire_await: layer {}: index {} of a {}-expert request", component_,
                               layer, index, a.n));
  if (a.prefetch[index]) return await_prefetch(layer, a, index, ready);
  const mp_ticket ticket = a.tickets[index];
  if (ticket == 0) return MP_OK;  // a hit, or its bytes were waited for already
  const uint64_t t0 = now();
  const mp_transport_vtable* v = transport_.vtable;
  if (MP_HAS_FIELD(v, mp_transport_vtable, ticket_event) && v->ticket_event != nullptr &&
      v->ticket_event(transport_.self, ticket, ready) == MP_OK && *ready != nullptr) {
    const uint64_t t1 = now();
    read_ns_ += t1 - t0;
    wait_ns_ += t1 - t0;
    return MP_OK;
  }
  // No event to hand out: wait for the ticket here and keep its verdict for acquire_finish.
  *ready = nullptr;
  mp_ticket_result r = mp::no_failed_request();
  const mp_status s = mp::report_ticket(v, transport_.self, ticket, false, r);
  const uint64_t t1 = now();
  read_ns_ += t1 - t0;
  wait_ns_ += t1 - t0;
  a.tickets[index] = 0;
  if (s != MP_OK && a.failed == MP_OK) {
    a.failed = s;
    a.why = transport_error();
    a.failed_result = r;
  }
  return MP_OK;
}

mp_status PagedPager::acquire_finish(uint32_t layer) {
  note_layer_call(layer);
  StartedAcquire& a = started_of(layer, "acquire_finish");
  a.active = false;
  --started_count_;
  const uint64_t t0 = now();
  for (uint32_t i = 0; i < a.n; ++i) {
    if (a.tickets[i] == 0) continue;
    mp_ticket_result r = mp::no_failed_request();
    const mp_status s = mp::report_ticket(transport_.vtable, transport_.self, a.tickets[i], false, r);
    a.tickets[i] = 0;
    if (s != MP_OK && a.failed == MP_OK) {
      a.failed = s;
      a.why = transport_error();
      a.failed_result = r;
    }
  }
  const uint64_t t1 = now();
  read_ns_ += t1 - t0;
  wait_ns_ += t1 - t0;
  // Prefetched experts the request used: a read that failed after its event was handed out may
  // have been computed from, so the request fails (closed) and the expert is read again next time.
  std::optional<std::pair<uint32_t, ReadFailure>> prefetch_failed;
  for (uint32_t i = 0; i < a.n; ++i) {
    if (!a.prefetch[i]) continue;
    a.prefetch[i] = 0;
    ReadFailure f{MP_OK, {}, mp::no_failed_request()};
    if (land_slot(layer, a.slots[i], &f) || prefetch_failed) continue;
    core_->drop(layer, a.experts[i]);
    prefetch_failed.emplace(i, std::move(f));
  }
  if (a.fill != 0 && a.failed != MP_OK) {
    core_->invalidate_fill(layer, a.fill);
    fail_read(layer, {a.experts.data(), a.n}, {a.missed.data(), a.n}, ReadFailure{a.failed, a.why, a.failed_result});
  }
  if (a.fill != 0) {
    core_->commit_fill(layer, a.fill);
    bytes_read_ += a.bytes;
  }
  if (a.failed != MP_OK)  // a prefetched expert's read again (await without an event) failed
    fail_read(layer, {a.experts.data(), a.n}, {a.missed.data(), a.n}, ReadFailure{a.failed, a.why, a.failed_result});
  if (prefetch_failed) {
    std::fill_n(a.missed.begin(), a.n, uint8_t{0});
    a.missed[prefetch_failed->first] = 1;
    fail_read(layer, {a.experts.data(), a.n}, {a.missed.data(), a.n}, prefetch_failed->second);
  }
  return MP_OK;
}

mp_status PagedPager::await_prefetch(uint32_t layer, StartedAcquire& a, uint32_t index, mp_event* ready) {
  SlotRead& r = slot_reads_[layer][a.slots[index]];
  if (r.ticket == 0) {  // landed meanwhile (an eviction elsewhere waited for it)
    a.prefetch[index] = 0;
    return MP_OK;
  }
  const uint64_t t0 = now();
  const mp_transport_vtable* v = transport_.vtable;
  if (MP_HAS_FIELD(v, mp_transport_vtable, ticket_event) && v->ticket_event != nullptr &&
      v->ticket_event(transport_.self, r.ticket, ready) == MP_OK && *ready != nullptr) {
    wait_ns_ += now() - t0;
    return MP_OK;  // finish lands the ticket and judges it
  }
  // No event: the bytes land here, and a failed read is read again before anything uses the slot.
  *ready = nullptr;
  a.prefetch[index] = 0;
  ReadFailure f{MP_OK, {}, mp::no_failed_request()};
  if (!land_slot(layer, a.slots[index], &f) && !read_again(layer, uint32_t(a.experts[index]), a.slots[index], f) &&
      a.failed == MP_OK) {
    a.missed[index] = 1;  // named by finish
    a.failed = f.status;
    a.why = f.why;
    a.failed_result = f.result;
  }
  return MP_OK;
}

}  // namespace moepage::paging
