// The pager ref one rank's architecture is bound to: it forwards every call to the rank's pager,
// whose catalog is the rank's own (RankCatalog), turning the architecture's global expert ids into
// the rank's ids and, in trace events, back. An acquire of an expert another rank owns is refused
// (MP_ERR_INVALID_ARG naming layer, expert and owner): the architecture computes only its own.
// Hints are advice, so the experts of other ranks are dropped from them (a hash-routed layer's
// hint names every expert its tokens use).
//
// Everything is sized at construction: the id translation allocates nothing per call.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "moepage/moepage.h"
#include "parallel/expert_partition.hpp"

namespace moepage::parallel {

class RankPagerRef {
 public:
  // `pager` and `catalog` must outlive this object; ref() is valid while it lives.
  RankPagerRef(const mp_pager_ref& pager, const RankCatalog& catalog, const ExpertPartition& partition);
  RankPagerRef(const RankPagerRef&) = delete;
  RankPagerRef& operator=(const RankPagerRef&) = delete;

  mp_pager_ref ref() { return mp_pager_ref{sizeof(mp_pager_ref), &vtable_, this}; }

 private:
  static RankPagerRef& of(void* self) { return *static_cast<RankPagerRef*>(self); }
  // The pager, for a call forwarded as it is.
  static const mp_pager_ref& pass(void* self);
  // experts[0..n) in the rank's ids into ids_; false (and the error set) when one is not owned.
  bool to_local(uint32_t layer, const int32_t* experts, uint32_t n);
  // The owned experts of experts[0..n), in the rank's ids, into ids_; returns how many.
  uint32_t owned_hints(uint32_t layer, const int32_t* experts, uint32_t n);
  mp_status fail(mp_status s, std::string message);
  // s, and on a failure the pager's message with the call's local ids mapped to global ones.
  mp_status named(mp_status s, uint32_t layer, const int32_t* experts, uint32_t n);
  static void on_event(void* ctx, const mp_trace_event* event);
  void install_calls();

  mp_pager_ref inner_{};
  const RankCatalog& catalog_;
  const ExpertPartition& partition_;
  mp_pager_vtable vtable_{};
  std::vector<int32_t> ids_;  // [n_experts]: the translated ids of the call in flight
  std::string error_;
  bool own_error_ = false;  // the last failure was this ref's, not the pager's
  mp_trace_fn trace_fn_ = nullptr;
  void* trace_ctx_ = nullptr;
};

}  // namespace moepage::parallel
