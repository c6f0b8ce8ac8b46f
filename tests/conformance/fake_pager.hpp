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
  counts_hits_as_misses,  // stats say every access was a miss
  accepts_any_expert,     // no range check on expert ids (returns a slot anyway)
};

template <PagerFault F>
class FakePager {
 public:
  FakePager(const mp_pager_create_args& args, const mp::Options&)
      : catalog_(*args.catalog), transport_(args.transport) {
    slots_.resize(static_cast<size_t>(catalog_.n_layers) * catalog_.n_experts);
    layers_.resize(catalog_.n_layers);
    const mp_transport_vtable* t = transport_.vtable;
    for (uint32_t i = 0; i < catalog_.n_files; ++i) {
      uint32_t handle = 0;
      if (t->open(transport_.self, catalog_.files[i], &handle) != MP_OK) throw mp::Error(MP_ERR_IO, t->last_error(transport_.self));
      handles_.push_back(handle);
    }
  }
  void begin_token(uint64_t) {}
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
    if (layer >= catalog_.n_layers || !catalog_.has_experts[layer]) throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: bad layer");
    for (uint32_t i = 0; i < n; ++i) {
      int32_t e = experts[i];
      if (e < 0 || static_cast<uint32_t>(e) >= catalog_.n_experts) {
        if constexpr (F != PagerFault::accepts_any_expert) throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: bad expert");
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
  }
  void stats(mp_pager_stats* out) {
    out->accesses = total_.accesses;
    out->hits = total_.hits;
    out->misses = total_.misses;
  }
  void layer_stats(uint32_t layer, mp_pager_layer_stats* out) {
    if (layer >= layers_.size()) throw mp::Error(MP_ERR_INVALID_ARG, "fake pager: bad layer");
    out->accesses = layers_[layer].accesses;
    out->hits = layers_[layer].hits;
    out->misses = layers_[layer].misses;
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
    mp_status s = t->submit(transport_.self, reads.data(), static_cast<uint32_t>(reads.size()), &ticket);
    if (s == MP_OK) s = t->wait(transport_.self, ticket);
    if (s != MP_OK) throw mp::Error(s, std::string("fake pager: ") + t->last_error(transport_.self));
    slot = std::move(bytes);
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
};

template <PagerFault F>
const mp_component_descriptor& fake_pager_descriptor() {
  static const mp_component_descriptor d =
      mp::make_pager_descriptor<FakePager<F>>("fake-pager", "0", "test double", MP_CAP_CPU);
  return d;
}

}  // namespace conform_test
