// A small pager for testing the pager conformance checks: one slot per expert, filled on first
// use through the transport it was given (so it is correct, and fails closed: a failed read
// leaves the slot empty). One deliberate fault is selectable per instantiation.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "moepage/cpp/plugin_adapter.hpp"

namespace conform_test {

enum class PagerFault {
  none,
  counts_hits_as_misses,   // stats say every access was a miss
  reports_io,              // a failed read fails acquire with io, whatever the transport said
  names_first_part,        // a failed read is named by the expert's first part, not the one reported
  full_size_on_zero,       // stats take struct_size 0 to mean the full struct, and write it
  accepts_any_expert,      // no range check on expert ids (returns a slot anyway)
  split_without_await,     // offers acquire_start and acquire_finish, but no acquire_await
  restarts_started_layer,  // a started layer takes a second acquire_start and a plain acquire
};

template <PagerFault F>
class FakePager {
 public:
  FakePager(const mp_pager_create_args& args, const mp::Options&)
      : catalog_(*args.catalog), transport_(args.transport) {
    slots_.resize(static_cast<size_t>(catalog_.n_layers) * catalog_.n_experts);
    layers_.resize(catalog_.n_layers);
    started_.assign(catalog_.n_layers, 0);
    const mp_transport_vtable* t = transport_.vtable;
    for (uint32_t i = 0; i < catalog_.n_files; ++i) {
      uint32_t handle = 0;
      if (t->open(transport_.self, catalog_.files[i], &handle) != MP_OK)
        throw mp::Error(MP_ERR_IO, t->last_error(transport_.self));
      handles_.push_back(handle);
    }
  }
  void begin_token(uint64_t) {}
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* caller) {
    mp_acquire_result result = mp::read_in(caller, "fake pager: acquire");
    mp_acquire_result* out = &result;
    if (layer >= catalog_.n_layers || !catalog_.has_experts[layer])
      throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: bad layer");
    if (started_[layer] != 0 && F != PagerFault::restarts_started_layer)
      throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: layer started");
    for (uint32_t i = 0; i < n; ++i) {
      int32_t e = experts[i];
      if (e < 0 || static_cast<uint32_t>(e) >= catalog_.n_experts) {
        if constexpr (F != PagerFault::accepts_any_expert)
          throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: bad expert");
        e = 0;
      }
      std::vector<unsigned char>& slot = slots_[layer * catalog_.n_experts + static_cast<uint32_t>(e)];
      const bool hit = !slot.empty();
      if (!hit) fill(layer, static_cast<uint32_t>(e), slot);
      count(layer, hit);
      out->slots[i] = slot.data();
    }
    out->ready = nullptr;
    out->table_changed = 1;
    mp::write_out(caller, result, "fake pager: acquire");
  }
  // The split acquire (ABI 1.5): reads at start, so nothing is ever pending.
  void acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* caller) {
    const mp_acquire_result in = mp::read_in(caller, "fake pager: acquire_start");
    if (n > 0 && in.pending == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: no pending array");
    acquire(layer, experts, n, caller);
    std::memset(in.pending, 0, n);
    started_[layer] = n + 1;
  }
  void acquire_await(uint32_t layer, uint32_t index, mp_event* ready) {
    if (layer >= catalog_.n_layers || started_[layer] == 0 || index >= started_[layer] - 1 || ready == nullptr)
      throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: nothing to await");
    *ready = nullptr;
  }
  void acquire_finish(uint32_t layer) {
    if (layer >= catalog_.n_layers || started_[layer] == 0)
      throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: nothing started");
    started_[layer] = 0;
  }
  void stats(mp_pager_stats* out) {
    mp_pager_stats s{};
    s.struct_size = sizeof s;
    s.accesses = total_.accesses;
    s.hits = total_.hits;
    s.misses = total_.misses;
    if constexpr (F == PagerFault::full_size_on_zero) {
      if (out->struct_size == 0) {
        *out = s;
        return;
      }
    }
    mp::write_out(out, s, "fake pager: stats");
  }
  void layer_stats(uint32_t layer, mp_pager_layer_stats* out) {
    if (layer >= layers_.size()) throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: bad layer");
    mp_pager_layer_stats s = layers_[layer];
    s.struct_size = sizeof s;
    mp::write_out(out, s, "fake pager: layer_stats");
  }

 private:
  void fill(uint32_t layer, uint32_t expert, std::vector<unsigned char>& slot) {
    std::vector<unsigned char> bytes(catalog_.expert_bytes);
    std::vector<mp_read_request> reads;
    for (uint32_t p = 0; p < catalog_.n_parts; ++p) {
      const mp_expert_segment& s = catalog_.segments[(layer * catalog_.n_experts + expert) * catalog_.n_parts + p];
      mp_read_request r{};
      r.struct_size = sizeof r;
      r.file = handles_[s.file];
      r.offset = s.offset;
      r.length = s.length;
      r.dst = bytes.data();
      r.dst_offset = catalog_.part_offset[p];
      reads.push_back(r);
    }
    const mp_transport_vtable* t = transport_.vtable;
    mp_ticket ticket = 0;
    mp_ticket_result result = mp::no_failed_request();
    mp_status s = t->submit(transport_.self, reads.data(), static_cast<uint32_t>(reads.size()), &ticket);
    if (s == MP_OK) s = mp::report_ticket(t, transport_.self, ticket, false, result);
    if (s == MP_OK) {
      slot = std::move(bytes);
      return;
    }
    uint32_t part = result.failed_request < reads.size() ? result.failed_request : 0;
    if constexpr (F == PagerFault::names_first_part) part = 0;
    const mp_expert_segment& seg = catalog_.segments[(layer * catalog_.n_experts + expert) * catalog_.n_parts + part];
    if constexpr (F == PagerFault::reports_io) s = MP_ERR_IO;
    throw mp::Error(s, std::string("fake pager: reading ") + catalog_.files[seg.file] + " at offset " +
                           std::to_string(seg.offset) + " failed: " + t->last_error(transport_.self));
  }
  void count(uint32_t layer, bool hit) {
    const bool as_hit = hit && F != PagerFault::counts_hits_as_misses;
    for (mp_pager_layer_stats* s : {&total_, &layers_[layer]}) {
      ++s->accesses;
      (as_hit ? s->hits : s->misses)++;
    }
  }
  mp_expert_catalog catalog_;
  mp_transport_ref transport_;
  std::vector<uint32_t> handles_;
  std::vector<std::vector<unsigned char>> slots_;
  std::vector<mp_pager_layer_stats> layers_;
  mp_pager_layer_stats total_{};
  std::vector<uint32_t> started_;  // [n_layers] n + 1 between acquire_start and acquire_finish
};

template <PagerFault F>
const mp_component_descriptor& fake_pager_descriptor() {
  static const mp_component_descriptor d = [] {
    mp_component_descriptor made =
        mp::make_pager_descriptor<FakePager<F>>("fake-pager", "0", "test double", MP_CAP_CPU);
    if constexpr (F == PagerFault::split_without_await) {
      static mp_pager_vtable partial = *made.pager;
      partial.acquire_await = nullptr;
      made.pager = &partial;
    }
    return made;
  }();
  return d;
}

}  // namespace conform_test
